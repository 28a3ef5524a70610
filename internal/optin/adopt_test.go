package optin

import (
	"testing"
)

func TestFormatAdoptRevisions(t *testing.T) {
	if got := FormatAdoptRevisions(map[string]string{"b": "web-2", "a": "web-1"}); got != `{"a":"web-1","b":"web-2"}` {
		t.Errorf("FormatAdoptRevisions = %s, want its keys sorted", got)
	}
	if got := FormatAdoptRevisions(nil); got != `{}` {
		t.Errorf("FormatAdoptRevisions(nil) = %s, want {}", got)
	}
}
