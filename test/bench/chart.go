package main

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"strings"
)

// barGroup is one scenario's bars, one per party (nil: not run).
type barGroup struct {
	label string
	bars  []*float64
}

var partyColors = []color.RGBA{
	{0x9e, 0x9e, 0x9e, 0xff}, // raw: grey
	{0x42, 0x85, 0xf4, 0xff}, // Deployment: blue
	{0x0f, 0x9d, 0x58, 0xff}, // MyDeployment: green
}

// barChart draws grouped bars of seconds with their values, a legend and a
// title, using only the standard library (a 5x7 bitmap font below).
func barChart(title string, legend []string, groups []barGroup) ([]byte, error) {
	const (
		w, h                 = 900, 500
		left, right, top, bo = 70, 20, 70, 60
	)
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	fill(img, img.Bounds(), color.RGBA{0xff, 0xff, 0xff, 0xff})
	maxV := 0.0
	for _, g := range groups {
		for _, v := range g.bars {
			if v != nil && *v > maxV {
				maxV = *v
			}
		}
	}
	if maxV == 0 {
		maxV = 1
	}
	maxV *= 1.15
	plotH := h - top - bo
	axis := color.RGBA{0x33, 0x33, 0x33, 0xff}
	grid := color.RGBA{0xe0, 0xe0, 0xe0, 0xff}
	// Grid lines and y labels at 5 steps.
	for i := 0; i <= 5; i++ {
		v := maxV * float64(i) / 5
		y := h - bo - int(float64(plotH)*float64(i)/5)
		fill(img, image.Rect(left, y, w-right, y+1), grid)
		text(img, left-6-textWidth(fmtSeconds(v), 2), y-7, fmtSeconds(v), 2, axis)
	}
	fill(img, image.Rect(left, top, left+2, h-bo), axis)
	fill(img, image.Rect(left, h-bo, w-right, h-bo+2), axis)
	groupW := (w - left - right) / max(1, len(groups))
	barW := groupW / (len(legend) + 2)
	for gi, g := range groups {
		x0 := left + gi*groupW + barW
		for bi, v := range g.bars {
			if v == nil {
				continue
			}
			bh := int(float64(plotH) * *v / maxV)
			x := x0 + bi*barW
			fill(img, image.Rect(x+2, h-bo-bh, x+barW-2, h-bo), partyColors[bi%len(partyColors)])
			label := fmtSeconds(*v)
			text(img, x+barW/2-textWidth(label, 2)/2, h-bo-bh-18, label, 2, axis)
		}
		text(img, left+gi*groupW+groupW/2-textWidth(g.label, 2)/2, h-bo+14, g.label, 2, axis)
	}
	text(img, left, 14, title, 2, axis)
	lx := left
	for i, l := range legend {
		fill(img, image.Rect(lx, 42, lx+14, 56), partyColors[i%len(partyColors)])
		text(img, lx+20, 43, l, 2, axis)
		lx += 20 + textWidth(l, 2) + 30
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func fmtSeconds(v float64) string {
	if v >= 100 {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.1f", v)
}

func fill(img *image.RGBA, r image.Rectangle, c color.RGBA) {
	r = r.Intersect(img.Bounds())
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			img.SetRGBA(x, y, c)
		}
	}
}

func textWidth(s string, scale int) int { return len(s) * 6 * scale }

// text draws s with its top-left corner at (x, y), each font pixel scale x scale.
func text(img *image.RGBA, x, y int, s string, scale int, c color.RGBA) {
	for i, r := range strings.ToUpper(s) {
		g, ok := glyphs[r]
		if !ok {
			g = glyphs['?']
		}
		for row, bits := range g {
			for col := range 5 {
				if bits[col] == '#' {
					fill(img, image.Rect(x+(i*6+col)*scale, y+row*scale, x+(i*6+col+1)*scale, y+(row+1)*scale), c)
				}
			}
		}
	}
}

// glyphs is a 5x7 bitmap font: upper case, digits and a little punctuation.
var glyphs = map[rune][7]string{
	' ': {".....", ".....", ".....", ".....", ".....", ".....", "....."},
	'?': {".###.", "#...#", "....#", "...#.", "..#..", ".....", "..#.."},
	'.': {".....", ".....", ".....", ".....", ".....", ".##..", ".##.."},
	',': {".....", ".....", ".....", ".....", ".##..", "..#..", ".#..."},
	':': {".....", ".##..", ".##..", ".....", ".##..", ".##..", "....."},
	'-': {".....", ".....", ".....", "#####", ".....", ".....", "....."},
	'_': {".....", ".....", ".....", ".....", ".....", ".....", "#####"},
	'/': {"....#", "...#.", "...#.", "..#..", ".#...", ".#...", "#...."},
	'(': {"...#.", "..#..", ".#...", ".#...", ".#...", "..#..", "...#."},
	')': {".#...", "..#..", "...#.", "...#.", "...#.", "..#..", ".#..."},
	'%': {"##...", "##..#", "...#.", "..#..", ".#...", "#..##", "...##"},
	'=': {".....", ".....", "#####", ".....", "#####", ".....", "....."},
	'0': {".###.", "#...#", "#..##", "#.#.#", "##..#", "#...#", ".###."},
	'1': {"..#..", ".##..", "..#..", "..#..", "..#..", "..#..", ".###."},
	'2': {".###.", "#...#", "....#", "...#.", "..#..", ".#...", "#####"},
	'3': {"#####", "...#.", "..#..", "...#.", "....#", "#...#", ".###."},
	'4': {"...#.", "..##.", ".#.#.", "#..#.", "#####", "...#.", "...#."},
	'5': {"#####", "#....", "####.", "....#", "....#", "#...#", ".###."},
	'6': {"..##.", ".#...", "#....", "####.", "#...#", "#...#", ".###."},
	'7': {"#####", "....#", "...#.", "..#..", ".#...", ".#...", ".#..."},
	'8': {".###.", "#...#", "#...#", ".###.", "#...#", "#...#", ".###."},
	'9': {".###.", "#...#", "#...#", ".####", "....#", "...#.", ".##.."},
	'A': {".###.", "#...#", "#...#", "#####", "#...#", "#...#", "#...#"},
	'B': {"####.", "#...#", "#...#", "####.", "#...#", "#...#", "####."},
	'C': {".###.", "#...#", "#....", "#....", "#....", "#...#", ".###."},
	'D': {"###..", "#..#.", "#...#", "#...#", "#...#", "#..#.", "###.."},
	'E': {"#####", "#....", "#....", "####.", "#....", "#....", "#####"},
	'F': {"#####", "#....", "#....", "####.", "#....", "#....", "#...."},
	'G': {".###.", "#...#", "#....", "#.###", "#...#", "#...#", ".####"},
	'H': {"#...#", "#...#", "#...#", "#####", "#...#", "#...#", "#...#"},
	'I': {".###.", "..#..", "..#..", "..#..", "..#..", "..#..", ".###."},
	'J': {"..###", "...#.", "...#.", "...#.", "...#.", "#..#.", ".##.."},
	'K': {"#...#", "#..#.", "#.#..", "##...", "#.#..", "#..#.", "#...#"},
	'L': {"#....", "#....", "#....", "#....", "#....", "#....", "#####"},
	'M': {"#...#", "##.##", "#.#.#", "#.#.#", "#...#", "#...#", "#...#"},
	'N': {"#...#", "#...#", "##..#", "#.#.#", "#..##", "#...#", "#...#"},
	'O': {".###.", "#...#", "#...#", "#...#", "#...#", "#...#", ".###."},
	'P': {"####.", "#...#", "#...#", "####.", "#....", "#....", "#...."},
	'Q': {".###.", "#...#", "#...#", "#...#", "#.#.#", "#..#.", ".##.#"},
	'R': {"####.", "#...#", "#...#", "####.", "#.#..", "#..#.", "#...#"},
	'S': {".####", "#....", "#....", ".###.", "....#", "....#", "####."},
	'T': {"#####", "..#..", "..#..", "..#..", "..#..", "..#..", "..#.."},
	'U': {"#...#", "#...#", "#...#", "#...#", "#...#", "#...#", ".###."},
	'V': {"#...#", "#...#", "#...#", "#...#", "#...#", ".#.#.", "..#.."},
	'W': {"#...#", "#...#", "#...#", "#.#.#", "#.#.#", "#.#.#", ".#.#."},
	'X': {"#...#", "#...#", ".#.#.", "..#..", ".#.#.", "#...#", "#...#"},
	'Y': {"#...#", "#...#", ".#.#.", "..#..", "..#..", "..#..", "..#.."},
	'Z': {"#####", "....#", "...#.", "..#..", ".#...", "#....", "#####"},
}
