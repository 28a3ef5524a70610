// Package promserver is a small Prometheus for tests, built from
// Prometheus' own packages: a scrape loop of one target into a TSDB
// (Scraper) and the instant-query API answered by the PromQL engine
// (QueryHandler).
package promserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/textparse"
	"github.com/prometheus/prometheus/model/value"
	"github.com/prometheus/prometheus/storage"
)

// Scraper does what Prometheus' scrape loop does with one target, with
// Prometheus' own exposition parser and storage: every interval it GETs
// url, appends each sample at the scrape's time (job and instance labels
// added), and marks series gone from the exposition stale.
type Scraper struct {
	url      string
	db       storage.Appendable
	interval time.Duration
	target   labels.Labels

	mu sync.Mutex
	// names are the metric names seen, each with the label names its series carry.
	names map[string]map[string]bool
	// last holds the series of the previous scrape, for staleness markers.
	last     map[string]labels.Labels
	scrapes  int
	lastErr  error
	stopOnce sync.Once
	stop     chan struct{}
	done     chan struct{}
}

// NewScraper returns the scrape loop of url into db every interval, its
// series labelled with job and instance.
func NewScraper(url string, db storage.Appendable, interval time.Duration, job, instance string) *Scraper {
	return &Scraper{
		url: url, db: db, interval: interval,
		target: labels.FromStrings("job", job, "instance", instance),
		names:  map[string]map[string]bool{}, last: map[string]labels.Labels{},
		stop: make(chan struct{}), done: make(chan struct{}),
	}
}

// Run scrapes until stopped (Finish), then once more.
func (s *Scraper) Run(ctx context.Context) {
	defer close(s.done)
	t := time.NewTicker(s.interval)
	defer t.Stop()
	for {
		s.record(s.scrape(ctx, time.Now()))
		select {
		case <-s.stop:
			s.record(s.scrape(ctx, time.Now()))
			return
		case <-t.C:
		}
	}
}

// Finish stops the loop after a last scrape; it returns how many scrapes
// succeeded and the last error.
func (s *Scraper) Finish() (int, error) {
	s.stopOnce.Do(func() { close(s.stop) })
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.scrapes, s.lastErr
}

func (s *Scraper) record(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		s.lastErr = err
		return
	}
	s.scrapes++
}

// scrape reads the exposition once and appends it at now.
func (s *Scraper) scrape(ctx context.Context, now time.Time) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.url, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "text/plain;version=0.0.4")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("scraping %s: %w", s.url, err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		return fmt.Errorf("scraping %s: status %d, %v", s.url, resp.StatusCode, err)
	}
	p, err := textparse.New(body, resp.Header.Get("Content-Type"), labels.NewSymbolTable(), textparse.ParserOptions{})
	if p == nil {
		return fmt.Errorf("no parser for %q: %w", resp.Header.Get("Content-Type"), err)
	}
	app := s.db.Appender(ctx)
	if err := s.appendAll(app, p, now.UnixMilli()); err != nil {
		_ = app.Rollback()
		return err
	}
	return app.Commit()
}

// appendAll appends every sample p parses at ts, and a staleness marker
// for each series of the previous scrape this one lacks.
func (s *Scraper) appendAll(app storage.Appender, p textparse.Parser, ts int64) error {
	seen := map[string]labels.Labels{}
	for {
		entry, err := p.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("parsing the exposition: %w", err)
		}
		if entry != textparse.EntrySeries {
			continue
		}
		_, _, v := p.Series()
		var lset labels.Labels
		p.Labels(&lset)
		b := labels.NewBuilder(lset)
		s.target.Range(func(l labels.Label) { b.Set(l.Name, l.Value) })
		lset = b.Labels()
		if _, err := app.Append(0, lset, ts, v); err != nil {
			return fmt.Errorf("appending %s: %w", lset, err)
		}
		seen[lset.String()] = lset
		s.note(lset)
	}
	for key, lset := range s.last {
		if _, ok := seen[key]; !ok {
			if _, err := app.Append(0, lset, ts, math.Float64frombits(value.StaleNaN)); err != nil {
				return fmt.Errorf("marking %s stale: %w", lset, err)
			}
		}
	}
	s.last = seen
	return nil
}

// note records lset's metric name and label names.
func (s *Scraper) note(lset labels.Labels) {
	s.mu.Lock()
	defer s.mu.Unlock()
	name := lset.Get(labels.MetricName)
	if s.names[name] == nil {
		s.names[name] = map[string]bool{}
	}
	lset.Range(func(l labels.Label) { s.names[name][l.Name] = true })
}

// Exported returns the metric names seen, with their label names.
func (s *Scraper) Exported() map[string]map[string]bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.names
}
