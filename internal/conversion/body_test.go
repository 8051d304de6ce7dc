package conversion

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
)

// TestReadBody: the body is read whole whatever its Content-Length said,
// and one that says its length is held in one buffer of that size, after
// the first.
func TestReadBody(t *testing.T) {
	body := strings.Repeat("x", 1<<20)
	for _, c := range []struct {
		name   string
		length int64
	}{
		{"as said", int64(len(body))},
		{"unknown", -1},
		{"said shorter", 100},
		{"said longer", int64(len(body)) * 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := ReadBody(strings.NewReader(body), c.length)
			if err != nil || string(got) != body {
				t.Fatalf("ReadBody read %d bytes, err %v; want the %d of the body", len(got), err, len(body))
			}
		})
	}
	allocs := testing.AllocsPerRun(10, func() {
		got, _ := ReadBody(bytes.NewReader([]byte(body)[:len(body):len(body)]), int64(len(body)))
		if cap(got) != len(body)+1 {
			t.Fatalf("a body of %d bytes that said so was read into %d bytes", len(body), cap(got))
		}
	})
	// The body's copy and its reader, the first buffer and the one of
	// the body's length.
	if allocs > 4 {
		t.Errorf("reading a body that said its length took %v allocations", allocs)
	}
}

// TestReadBodyError: a reader's error is returned.
func TestReadBodyError(t *testing.T) {
	if _, err := ReadBody(io.MultiReader(strings.NewReader("ab"), errReader{}), 2); err == nil || err.Error() != "broken" {
		t.Errorf("ReadBody of a broken reader: %v, want its error", err)
	}
}

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, errBroken }

var errBroken = errors.New("broken")

// TestReadBodyAllocatesForWhatArrives: a body that says it is 4 MiB long
// but sends a few bytes (a stranger's headers and a trickle) gets a
// buffer of at most the first 64 KiB, not the 4 MiB it claimed; one that
// sends them is read into one buffer of its length after that first one.
func TestReadBodyAllocatesForWhatArrives(t *testing.T) {
	got, err := ReadBody(strings.NewReader("{}"), MaxReviewBytes-1)
	if err != nil || string(got) != "{}" {
		t.Fatalf("ReadBody = %q, %v", got, err)
	}
	if cap(got) > 64<<10 {
		t.Errorf("a body that claimed %d bytes and sent 2 took a buffer of %d bytes", MaxReviewBytes-1, cap(got))
	}
	body := strings.Repeat("x", MaxReviewBytes-1)
	if got, err := ReadBody(strings.NewReader(body), int64(len(body))); err != nil || len(got) != len(body) || cap(got) != len(body)+1 {
		t.Errorf("a body of %d bytes that said so: read %d into %d bytes, err %v", len(body), len(got), cap(got), err)
	}
}
