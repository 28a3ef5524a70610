package main

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Process names of the per-window CPU figures besides the cluster's
// components (kwokctl's names): our manager, and the benchmark itself (its
// watches and, for the raw party, its client).
const (
	procManager = "manager"
	procBench   = "bench"
	procAll     = "all" // every process above, summed
)

// cpuColumns are the per-window CPU figures results.json and the README
// show: the cluster's components, our manager, the benchmark, their sum.
func cpuColumns() []string {
	return append(append([]string{}, components...), procManager, procBench, procAll)
}

// procSample is what /proc says about one process at one moment.
type procSample struct {
	CPUSeconds float64 // user + system since it started
	PeakRSSMiB float64 // VmHWM: the resident set's high-water mark
	RSSMiB     float64
	// The resident set now, split: anonymous memory (heap, stacks, buffers)
	// and pages of files (the binary's code and data).
	RSSAnonMiB, RSSFileMiB float64
}

// clockTicks is USER_HZ, 100 on every Linux the benchmark runs on.
const clockTicks = 100

// readProc samples pid; the error says the process is gone.
func readProc(pid int) (procSample, error) {
	var s procSample
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return s, err
	}
	// Fields after the command name (which may hold spaces) in parentheses.
	rest := string(stat)
	if i := strings.LastIndexByte(rest, ')'); i >= 0 {
		rest = rest[i+2:]
	}
	f := strings.Fields(rest)
	if len(f) < 13 {
		return s, fmt.Errorf("short /proc/%d/stat", pid)
	}
	utime, _ := strconv.ParseFloat(f[11], 64) // field 14
	stime, _ := strconv.ParseFloat(f[12], 64) // field 15
	s.CPUSeconds = (utime + stime) / clockTicks

	st, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return s, err
	}
	defer func() { _ = st.Close() }()
	sc := bufio.NewScanner(st)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		kib, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
		switch k {
		case "VmHWM":
			s.PeakRSSMiB = kib / 1024
		case "VmRSS":
			s.RSSMiB = kib / 1024
		case "RssAnon":
			s.RSSAnonMiB = kib / 1024
		case "RssFile":
			s.RSSFileMiB = kib / 1024
		}
	}
	return s, sc.Err()
}
