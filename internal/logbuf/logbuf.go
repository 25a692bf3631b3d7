// Package logbuf batches log lines into fewer writes: a Writer holds what it is given and
// writes it to the underlying writer when its buffer fills, every interval, and on Close.
//
// What a crash loses: the lines held at that moment, at most one interval's worth and at
// most Size bytes. A process that ends through Close (ledger serve's shutdown on SIGINT or
// SIGTERM, or any error return from serve) loses nothing; SIGKILL, an out-of-memory kill, a
// Go fatal error or a panic outside a recovered handler loses what is held. The service's
// data is not in these lines: the database commits it independently.
package logbuf

import (
	"io"
	"sync"
	"time"
)

// Size is the buffer's capacity: a line that would overflow it writes what is held first.
const Size = 64 << 10

// Writer is an io.Writer safe for concurrent use (slog's handlers write one whole line per
// call, so lines are never split or interleaved).
type Writer struct {
	mu   sync.Mutex
	w    io.Writer
	buf  []byte
	stop chan struct{}
	done chan struct{}
}

// New returns a Writer that flushes to w at least every interval (which must be positive)
// until Close.
func New(w io.Writer, interval time.Duration) *Writer {
	bw := &Writer{w: w, buf: make([]byte, 0, Size), stop: make(chan struct{}), done: make(chan struct{})}
	go bw.loop(interval)
	return bw
}

func (bw *Writer) loop(interval time.Duration) {
	defer close(bw.done)
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-bw.stop:
			return
		case <-t.C:
			_ = bw.Flush()
		}
	}
}

// Write holds p, writing what is held first when p would overflow the buffer, and p itself at
// once when it is larger than the buffer.
func (bw *Writer) Write(p []byte) (int, error) {
	bw.mu.Lock()
	defer bw.mu.Unlock()
	if len(bw.buf)+len(p) > cap(bw.buf) {
		if err := bw.flushLocked(); err != nil {
			return 0, err
		}
		if len(p) > cap(bw.buf) {
			return bw.w.Write(p)
		}
	}
	bw.buf = append(bw.buf, p...)
	return len(p), nil
}

// Flush writes what is held.
func (bw *Writer) Flush() error {
	bw.mu.Lock()
	defer bw.mu.Unlock()
	return bw.flushLocked()
}

// flushLocked writes the buffer and empties it even when the write fails: a log that
// cannot be written must not hold memory or block the lines after it.
func (bw *Writer) flushLocked() error {
	if len(bw.buf) == 0 {
		return nil
	}
	_, err := bw.w.Write(bw.buf)
	bw.buf = bw.buf[:0]
	return err
}

// Close stops the interval flush and writes what is held. Writes after Close go straight
// through (a late line is not lost).
func (bw *Writer) Close() error {
	bw.mu.Lock()
	select {
	case <-bw.stop:
		bw.mu.Unlock()
		return nil
	default:
		close(bw.stop)
	}
	err := bw.flushLocked()
	bw.buf = bw.buf[:0:0]
	bw.mu.Unlock()
	<-bw.done
	return err
}
