package conversion

import (
	"errors"
	"io"
)

// unknownLengthBuffer is the first buffer for a body whose length is not
// known (a chunked request); it grows as the body arrives.
const unknownLengthBuffer = 64 << 10

// ReadBody reads r to its end into one buffer sized from length, the
// request's Content-Length (-1 when unknown), so that a body of the
// largest size the webhook takes is held once, not in the doubling
// buffers of io.ReadAll, which allocate about twice the body. A body
// that is longer than length said is still read whole; what bounds it
// is the reader (an http.MaxBytesReader or io.LimitReader).
func ReadBody(r io.Reader, length int64) ([]byte, error) {
	size := int64(unknownLengthBuffer)
	if length >= 0 {
		// One byte more than said, so that the end of the body is
		// read without the buffer growing.
		size = min(length, MaxReviewBytes) + 1
	}
	buf := make([]byte, 0, size)
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
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
