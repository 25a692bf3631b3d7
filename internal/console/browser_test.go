package console_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/ledger-dev/ledger/internal/opstest"
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

func TestMain(m *testing.M) {
	code := func() int {
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
		// The machine has no internet: every flag that makes Chromium call home is off, so
		// nothing waits on a refused connection.
		opts := append(chromedp.DefaultExecAllocatorOptions[:],
			chromedp.ExecPath(path), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU,
			chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
			chromedp.Flag("disable-sync", true), chromedp.NoFirstRun, chromedp.UserDataDir(dir),
			chromedp.Flag("disable-dev-shm-usage", true), chromedp.WindowSize(1280, 900))
		alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
		defer cancelAlloc()
		ctx, cancel := chromedp.NewContext(alloc)
		defer cancel()
		// The browser lives as long as the context of the first action on it: a timeout
		// there would kill it after that long, mid-suite ("context canceled" in whichever
		// cases are still running). So the start waits with a timer of its own instead.
		started := make(chan error, 1)
		go func() { started <- chromedp.Do(ctx) }()
		select {
		case err = <-started:
		case <-time.After(60 * time.Second):
			cancel()
			err = errors.New("no answer in 60 s")
		}
		if err != nil {
			skipWhy = fmt.Sprintf("Chromium at %s did not start (%v): browser tests skipped", path, err)
			return m.Run()
		}
		browser = ctx
		return m.Run()
	}()
	os.Exit(code)
}

// tab opens a tab in a fresh browser context for one case.
func tab(t *testing.T) context.Context {
	t.Helper()
	if browser == nil {
		t.Skip(skipWhy)
	}
	ctx, cancel := chromedp.NewContext(browser, chromedp.WithNewBrowserContext())
	t.Cleanup(cancel)
	ctx, cancelT := context.WithTimeout(ctx, 90*time.Second)
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
func signIn(t *testing.T, ctx context.Context, s *opstest.Stack, key string) {
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
