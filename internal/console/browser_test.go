package console_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/ledger-dev/ledger/internal/apitest"
)

// One headless Chromium serves every browser test of this package; each case gets a tab in
// a browser context of its own (its own cookies), so cases run in parallel without seeing
// each other's sessions.
var (
	browser  context.Context
	skipWhy  string
	shotsDir = os.Getenv("LEDGER_SCREENSHOTS")
)

func chromiumPath() string {
	if p := os.Getenv("LEDGER_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// startWithin bounds how long Chromium may take to start before the browser tests skip.
const startWithin = 60 * time.Second

// browserOptions starts Chromium at path with its profile in dir. The machine has no
// internet: every flag that makes Chromium call home is off, so nothing waits on a refused
// connection.
func browserOptions(path, dir string) []chromedp.ExecAllocatorOption {
	return append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.NoFirstRun, chromedp.UserDataDir(dir),
		chromedp.Flag("disable-dev-shm-usage", true), chromedp.WindowSize(1280, 900))
}

// startBrowser starts the browser of alloc and returns its root context, which lives until
// cancel. bound limits only the start. chromedp ties a browser's life to the context of its
// first Run, so that Run must not get bound itself: a browser started under a 60-second
// timeout was killed 60 seconds in, and every case still running (or not yet started) on a
// loaded machine failed with "context canceled". Instead, bound ending before the start is
// done cancels the start.
//
// chromedp's cancel blocks for ever when called a second time on a context that never got as
// far as starting a process, so the bound and the failure paths share one call of it.
func startBrowser(alloc, bound context.Context) (ctx context.Context, cancel context.CancelFunc, err error) {
	ctx, cancelCtx := chromedp.NewContext(alloc)
	cancel = sync.OnceFunc(cancelCtx)
	stop := context.AfterFunc(bound, cancel)
	err = chromedp.Do(ctx)
	if !stop() {
		cancel() // waits for the call that the bound made to finish
		return nil, nil, fmt.Errorf("not started: %w", context.Cause(bound))
	}
	if err != nil {
		cancel()
		return nil, nil, err
	}
	return ctx, cancel, nil
}

func TestMain(m *testing.M) {
	flag.Parse() // testing.Short reads the parsed flags
	code := func() int {
		if testing.Short() {
			skipWhy = "-short: browser tests skipped"
			return m.Run()
		}
		path := chromiumPath()
		if path == "" {
			skipWhy = "no Chromium found (apt-get install -y chromium, or set LEDGER_CHROMIUM): browser tests skipped"
			return m.Run()
		}
		dir, err := os.MkdirTemp("", "ledger-chromium-")
		if err != nil {
			skipWhy = "no temporary directory for Chromium's profile: " + err.Error()
			return m.Run()
		}
		defer os.RemoveAll(dir)
		alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), browserOptions(path, dir)...)
		defer cancelAlloc()
		bound, stop := context.WithTimeout(alloc, startWithin)
		ctx, cancel, err := startBrowser(alloc, bound)
		stop()
		if err != nil {
			skipWhy = fmt.Sprintf("Chromium at %s did not start (%v): browser tests skipped", path, err)
			return m.Run()
		}
		defer cancel()
		browser = ctx
		return m.Run()
	}()
	os.Exit(code)
}

// TestBrowserOutlivesItsStartBound: the bound on the start of Chromium ends with the start,
// not with the browser. Cancelling it right after the start, as TestMain does, leaves a
// browser that still opens tabs and runs script.
func TestBrowserOutlivesItsStartBound(t *testing.T) {
	t.Parallel()
	if browser == nil {
		t.Skip(skipWhy)
	}
	// A browser of its own (its own profile: two Chromiums on one profile hand over to each
	// other), so that the shared one is not at stake.
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), browserOptions(chromiumPath(), t.TempDir())...)
	t.Cleanup(cancelAlloc)
	bound, stop := context.WithTimeout(alloc, startWithin)
	ctx, cancel, err := startBrowser(alloc, bound)
	stop()
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	t.Cleanup(cancel)
	tabCtx, cancelTab := chromedp.NewContext(ctx)
	t.Cleanup(cancelTab)
	tabCtx, cancelT := context.WithTimeout(tabCtx, 60*time.Second)
	t.Cleanup(cancelT)
	if n, err := chromedp.Run(tabCtx, chromedp.Evaluate[int](`6 * 7`)); err != nil || n != 42 {
		t.Fatalf("after its start bound ended the browser answered %d, %v; want 42", n, err)
	}

	// And a bound that ends first stops the start instead of leaving a browser behind.
	alloc2, cancelAlloc2 := chromedp.NewExecAllocator(context.Background(), browserOptions(chromiumPath(), t.TempDir())...)
	t.Cleanup(cancelAlloc2)
	ended, end := context.WithCancel(alloc2)
	end()
	if _, _, err := startBrowser(alloc2, ended); !errors.Is(err, context.Canceled) {
		t.Fatalf("a start under an ended bound gave %v, want context.Canceled", err)
	}
}

// tab opens a tab in a fresh browser context for one case, which has 90 s.
func tab(t *testing.T) context.Context {
	t.Helper()
	return tabWithin(t, 90*time.Second)
}

// tabWithin is tab for a case that has d: one that walks many pages (every bar's list to
// its last page) takes 50 s alone and more beside the rest of the suite on two cores.
func tabWithin(t *testing.T, d time.Duration) context.Context {
	t.Helper()
	if browser == nil {
		t.Skip(skipWhy)
	}
	ctx, cancel := chromedp.NewContext(browser, chromedp.WithNewBrowserContext())
	t.Cleanup(cancel)
	// The tab lives as long as the context of its first Run, so the case's deadline is set
	// here, before that Run, and every step of the case runs under it.
	ctx, cancelT := context.WithTimeout(ctx, d)
	t.Cleanup(cancelT)
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("open a tab: %v", err)
	}
	return ctx
}

func do(t *testing.T, ctx context.Context, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatalf("browser: %v", err)
	}
}

func text(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
	if err != nil {
		t.Fatalf("text of %s: %v", sel, err)
	}
	return strings.TrimSpace(s)
}

func eval[T any](t *testing.T, ctx context.Context, js string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](js))
	if err != nil {
		t.Fatalf("evaluate %s: %v", js, err)
	}
	return v
}

func location(t *testing.T, ctx context.Context) string {
	t.Helper()
	l, err := chromedp.Run(ctx, chromedp.Location())
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// shot writes a PNG of the whole page to $LEDGER_SCREENSHOTS/name.png when that is set.
func shot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	if shotsDir == "" {
		return
	}
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	if err := os.MkdirAll(shotsDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(shotsDir, name+".png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
}

// signIn signs in with key and waits for the overview.
func signIn(t *testing.T, ctx context.Context, s *apitest.Stack, key string) {
	t.Helper()
	do(t, ctx, chromedp.Navigate(s.URL+"/ui/signin"), chromedp.WaitVisible(chromedp.CSS("#key")),
		chromedp.SendKeys(chromedp.CSS("#key"), key), chromedp.Click(chromedp.CSS("#signin")),
		chromedp.WaitVisible(chromedp.CSS("#tenant")))
}

// clickNav clicks sel and waits for the next page to show waitSel: the old page is marked
// first, so an element of the page being left never satisfies the wait. Evaluations that
// race the navigation fail and are tried again.
func clickNav(t *testing.T, ctx context.Context, sel, waitSel string) {
	t.Helper()
	do(t, ctx, chromedp.Evaluate[chromedp.Void](`document.documentElement.dataset.left = "1"`), chromedp.Click(chromedp.CSS(sel)))
	waitFor(t, ctx, fmt.Sprintf(`!document.documentElement.dataset.left && document.readyState === "complete" && !!document.querySelector(%q)`, waitSel))
}

// waitFor polls a JavaScript condition until it holds.
func waitFor(t *testing.T, ctx context.Context, cond string) {
	t.Helper()
	var last error
	for ctx.Err() == nil {
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](cond))
		if err == nil && ok {
			return
		}
		last = err
		select {
		case <-ctx.Done():
		case <-time.After(50 * time.Millisecond):
		}
	}
	t.Fatalf("waiting for %s: %v (last error %v)", cond, ctx.Err(), last)
}
