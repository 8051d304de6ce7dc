package conversion

import (
	"errors"
	"io"
)

// firstBuffer is the most a body's first buffer takes, whatever its
// Content-Length says: a body that claims 4 MiB and sends nothing (a
// stranger's headers, then a trickle) takes no more.
const firstBuffer = 64 << 10

// ReadBody reads r to its end. A body that says its length (length, the
// request's Content-Length; -1 when unknown) is read into one buffer of
// that length once its first 64 KiB have arrived, so that a review of the
// largest size the webhook takes is held once, not in the doubling
// buffers of io.ReadAll, which allocate about twice the body; before,
// only what arrived is allocated for. A body that is longer than it said,
// or does not say, is read in doubling buffers. What bounds a body is the
// reader (an http.MaxBytesReader or io.LimitReader).
func ReadBody(r io.Reader, length int64) ([]byte, error) {
	// One byte more than said, so that the end of the body is read
	// without the buffer growing.
	said := int64(-1)
	if length >= 0 {
		said = min(length, MaxReviewBytes) + 1
	}
	size := int64(firstBuffer)
	if said >= 0 {
		size = min(size, said)
	}
	buf := make([]byte, 0, size)
	for {
		if len(buf) == cap(buf) {
			next := 2 * int64(cap(buf))
			if said > int64(cap(buf)) {
				next = said
			}
			grown := make([]byte, len(buf), next)
			copy(grown, buf)
			buf = grown
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if errors.Is(err, io.EOF) {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
	}
}
