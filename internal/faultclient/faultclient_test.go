package faultclient

import (
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	c, err := Parse("")
	if err != nil || c != nil {
		t.Fatalf("empty: got %v, %v; want off", c, err)
	}
	c, err = Parse("writes=0.1, reads=0.25,delay=300ms,lost=0.05")
	if err != nil {
		t.Fatal(err)
	}
	if *c != (Config{WriteFailure: 0.1, ReadDelay: 0.25, MaxDelay: 300 * time.Millisecond, LostReply: 0.05}) {
		t.Fatalf("got %+v", *c)
	}
	for _, bad := range []string{"writes", "writes=2", "reads=-0.1", "delay=soon", "latency=1s"} {
		if _, err := Parse(bad); err == nil {
			t.Errorf("%q: want an error", bad)
		}
	}
}
