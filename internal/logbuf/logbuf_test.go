package logbuf

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// sink records each write it is given.
type sink struct {
	mu     sync.Mutex
	writes []string
	fail   error
}

func (s *sink) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail != nil {
		return 0, s.fail
	}
	s.writes = append(s.writes, string(p))
	return len(p), nil
}

func (s *sink) got() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.writes...)
}

func TestHeldUntilClose(t *testing.T) {
	t.Parallel()
	var s sink
	w := New(&s, time.Hour)
	for i := range 3 {
		fmt.Fprintf(w, "line %d\n", i)
	}
	if got := s.got(); len(got) != 0 {
		t.Fatalf("written before the interval or Close: %q", got)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if got := s.got(); len(got) != 1 || got[0] != "line 0\nline 1\nline 2\n" {
		t.Fatalf("Close wrote %q, want the three lines in one write", got)
	}
	fmt.Fprintf(w, "late\n")
	if got := s.got(); len(got) != 2 || got[1] != "late\n" {
		t.Fatalf("a write after Close is %q, want it written at once", got)
	}
}

func TestFlushedEveryInterval(t *testing.T) {
	t.Parallel()
	var s sink
	w := New(&s, 5*time.Millisecond)
	defer w.Close()
	fmt.Fprintf(w, "line\n")
	for deadline := time.Now().Add(10 * time.Second); len(s.got()) == 0; {
		if time.Now().After(deadline) {
			t.Fatal("the line was never written without Close")
		}
		time.Sleep(time.Millisecond)
	}
}

func TestFullBufferWritesWhatIsHeld(t *testing.T) {
	t.Parallel()
	var s sink
	w := New(&s, time.Hour)
	first := strings.Repeat("a", Size-10)
	big := strings.Repeat("c", Size+1)
	for _, p := range []string{first, "bbbbbbbbbbbbbbbbbbbb", big, "d"} {
		if n, err := w.Write([]byte(p)); n != len(p) || err != nil {
			t.Fatalf("Write = %d, %v", n, err)
		}
	}
	want := []string{first, "bbbbbbbbbbbbbbbbbbbb", big}
	if got := s.got(); !slices.Equal(got, want) {
		t.Fatalf("writes %d, want the held bytes before the overflowing line and the oversize line through", len(got))
	}
	w.Close()
	if got := s.got(); !slices.Equal(got, append(want, "d")) {
		t.Fatalf("after Close %d writes, want the last line too", len(got))
	}
}

func TestConcurrentLinesStayWhole(t *testing.T) {
	t.Parallel()
	var s sink
	w := New(&s, time.Millisecond)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 2000 {
				fmt.Fprintf(w, "{\"g\":%d,\"i\":%d,\"pad\":%q}\n", g, i, strings.Repeat("x", i%300))
			}
		}()
	}
	wg.Wait()
	w.Close()
	lines := strings.Split(strings.TrimSuffix(strings.Join(s.got(), ""), "\n"), "\n")
	seen := map[string]bool{}
	for _, l := range lines {
		var g, i int
		if _, err := fmt.Sscanf(l, "{\"g\":%d,\"i\":%d,", &g, &i); err != nil || !strings.HasSuffix(l, "\"}") {
			t.Fatalf("a torn line: %q", l)
		}
		seen[l[:strings.Index(l, ",\"pad\"")]] = true
	}
	if len(lines) != 8*2000 || len(seen) != 8*2000 {
		t.Fatalf("%d lines, %d distinct, want %d", len(lines), len(seen), 8*2000)
	}
}

func TestFailedWriteEmptiesTheBuffer(t *testing.T) {
	t.Parallel()
	s := sink{fail: errors.New("disk full")}
	w := New(&s, time.Hour)
	fmt.Fprintf(w, "lost\n")
	if err := w.Flush(); err == nil {
		t.Fatal("Flush hid the writer's error")
	}
	s.mu.Lock()
	s.fail = nil
	s.mu.Unlock()
	fmt.Fprintf(w, "next\n")
	w.Close()
	if got := s.got(); !slices.Equal(got, []string{"next\n"}) {
		t.Fatalf("after a failed write %q, want only the later line", got)
	}
}
