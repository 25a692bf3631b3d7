// Package crashtest proves that nothing acknowledged is lost: it runs `ledger serve`,
// drives enqueue/claim/fenced-write/complete load at it, kills the process with SIGKILL at
// random moments, restarts it on the same database, and checks every acknowledged write.
package crashtest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"path/filepath"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/ledger-dev/ledger/cmd/ledger/internal/serveproc"
	"github.com/ledger-dev/ledger/internal/runs"
	"github.com/ledger-dev/ledger/internal/sqldb"
)

// Config says how hard to crash the service.
type Config struct {
	// Binary is the ledger executable.
	Binary string
	// Dir holds the database.
	Dir string
	// Kills is how many times the server is killed.
	Kills int
	// Clients run load concurrently.
	Clients int
	// MinUp and MaxUp bound how long the server runs under load before each kill.
	MinUp, MaxUp time.Duration
	// Sync is the SQLite durability setting: "normal" survives a process crash, which is
	// what SIGKILL is.
	Sync string
	Log  io.Writer
}

// Report is what the checks found.
type Report struct {
	Kills             int
	AckedRuns         int
	AckedClaims       int
	AckedWrites       int
	AckedCompletes    int
	AckedCheckpoints  int
	Lost              []string // acknowledged writes missing after a restart
	Disagreements     int      // attempt/run pairs out of step after a restart
	StuckLeases       int      // runs still leased past their lease after the reaper ran
	EpochRegressions  int      // runs whose epoch is below a token that was acknowledged
	CheckpointsMissed bool     // the checkpoint route was not available, so none were written
}

// OK reports whether every check passed.
func (r Report) OK() bool {
	return len(r.Lost) == 0 && r.Disagreements == 0 && r.StuckLeases == 0 && r.EpochRegressions == 0
}

func (r Report) String() string {
	status := "PASS"
	if !r.OK() {
		status = "FAIL"
	}
	return fmt.Sprintf("%s: %d kills; acknowledged %d runs, %d claims, %d fenced writes, %d completions, %d checkpoints; lost %d, disagreements %d, stuck leases %d, epoch regressions %d",
		status, r.Kills, r.AckedRuns, r.AckedClaims, r.AckedWrites, r.AckedCompletes, r.AckedCheckpoints,
		len(r.Lost), r.Disagreements, r.StuckLeases, r.EpochRegressions)
}

// ledger records what the server acknowledged.
type ledger struct {
	mu          sync.Mutex
	runs        map[uuid.UUID]bool
	tokens      map[uuid.UUID]int64  // highest acknowledged fencing token per run
	completed   map[uuid.UUID]string // attempt -> acknowledged final state
	checkpoints map[string]string    // attempt/sequence -> hash
	claims      int
	writes      int
}

func newLedger() *ledger {
	return &ledger{runs: map[uuid.UUID]bool{}, tokens: map[uuid.UUID]int64{}, completed: map[uuid.UUID]string{}, checkpoints: map[string]string{}}
}

// Run crashes the service cfg.Kills times under load and checks what survived.
func Run(ctx context.Context, cfg Config) (Report, error) {
	if cfg.Clients <= 0 {
		cfg.Clients = 8
	}
	if cfg.MaxUp <= cfg.MinUp {
		cfg.MaxUp = cfg.MinUp + time.Second
	}
	if cfg.Sync == "" {
		cfg.Sync = "normal"
	}
	if cfg.Log == nil {
		cfg.Log = io.Discard
	}
	db := filepath.Join(cfg.Dir, "ledger.db")
	flags := []string{"--sqlite-sync", cfg.Sync, "--reaper-interval", "200ms", "--lease-ttl", "2s"}
	srv, err := start(ctx, cfg.Binary, db, flags...)
	if err != nil {
		return Report{}, err
	}
	url, keys := srv.URL, srv.Keys
	if keys.Admin == "" || keys.Runtime == "" {
		srv.Kill()
		return Report{}, fmt.Errorf("the new database printed no bootstrap keys")
	}
	c := &client{admin: keys.Admin, runtime: keys.Runtime, http: &http.Client{Timeout: 10 * time.Second}}
	if err := c.setup(ctx, url); err != nil {
		srv.Kill()
		return Report{}, err
	}
	led := newLedger()
	rep := Report{}
	for kill := 1; kill <= cfg.Kills; kill++ {
		up := cfg.MinUp + time.Duration(rand.Int64N(int64(cfg.MaxUp-cfg.MinUp)))
		loadCtx, stopLoad := context.WithCancel(ctx)
		var wg sync.WaitGroup
		for i := range cfg.Clients {
			wg.Add(1)
			go func() { defer wg.Done(); c.load(loadCtx, url, led, i, &rep) }()
		}
		time.Sleep(up)
		srv.Kill() // mid-flight: requests in progress get no answer, so nothing is acknowledged for them
		stopLoad()
		wg.Wait()
		fmt.Fprintf(cfg.Log, "kill %d/%d after %s\n", kill, cfg.Kills, up.Round(time.Millisecond))
		rep.Kills = kill
		if srv, err = start(ctx, cfg.Binary, db, flags...); err != nil {
			return rep, fmt.Errorf("restart after kill %d: %w", kill, err)
		}
		url = srv.URL
		if err := c.verify(ctx, url, led, &rep); err != nil {
			srv.Kill()
			return rep, err
		}
		// Nothing half-written: after every crash, attempts and runs agree.
		n, err := disagreements(ctx, db)
		if err != nil {
			srv.Kill()
			return rep, err
		}
		rep.Disagreements += n
	}
	// Once the leases have run out and the reaper has had its turn, nothing stays leased.
	time.Sleep(2*time.Second + 600*time.Millisecond)
	if err := checkDatabase(ctx, db, led, &rep); err != nil {
		srv.Kill()
		return rep, err
	}
	if err := srv.Stop(30 * time.Second); err != nil {
		return rep, err
	}
	led.mu.Lock()
	rep.AckedRuns, rep.AckedClaims, rep.AckedWrites = len(led.runs), led.claims, led.writes
	rep.AckedCompletes, rep.AckedCheckpoints = len(led.completed), len(led.checkpoints)
	led.mu.Unlock()
	return rep, nil
}

type client struct {
	admin, runtime string
	http           *http.Client
	release        bool
}

func (c *client) call(ctx context.Context, method, url, key string, body any, out any) (int, error) {
	var r io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, r)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	res, err := c.http.Do(req)
	if err != nil {
		return 0, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		return 0, err // an answer cut short is no acknowledgement
	}
	if out != nil && res.StatusCode < 300 && len(b) > 0 {
		if err := json.Unmarshal(b, out); err != nil {
			return 0, err
		}
	}
	return res.StatusCode, nil
}

const (
	releaseID      = "crash-release"
	adapterVersion = "1.0"
)

func (c *client) setup(ctx context.Context, url string) error {
	if code, err := c.call(ctx, "PUT", url+"/v1/projects/crash", c.admin, map[string]any{}, nil); err != nil || code != 201 {
		return fmt.Errorf("create project: %d %v", code, err)
	}
	refs := []string{"crash://adapter"}
	canon, _ := json.Marshal(refs)
	sum := sha256.Sum256(canon)
	code, err := c.call(ctx, "PUT", url+"/v1/releases/"+releaseID+"/adapters/"+adapterVersion, c.admin,
		map[string]any{"manifestHash": hex.EncodeToString(sum[:]), "contentRefs": refs, "state": "active"}, nil)
	if err != nil {
		return fmt.Errorf("register release: %w", err)
	}
	c.release = code == 201
	if code != 201 && code != 404 && code != 405 {
		return fmt.Errorf("register release: %d", code)
	}
	return nil
}

type claimed struct {
	Run     struct{ RunID uuid.UUID } `json:"run"`
	Attempt struct {
		AttemptID uuid.UUID `json:"attemptId"`
	} `json:"attempt"`
	Lease struct {
		FencingToken int64 `json:"fencingToken"`
	} `json:"lease"`
}

// load runs cycles until ctx ends: enqueue, claim, heartbeat, checkpoints, complete.
// Only 2xx answers are recorded, and only as what they acknowledged.
func (c *client) load(ctx context.Context, url string, led *ledger, id int, rep *Report) {
	rng := rand.New(rand.NewPCG(uint64(id), uint64(time.Now().UnixNano())))
	for ctx.Err() == nil {
		var run struct {
			RunID uuid.UUID `json:"runId"`
		}
		body := map[string]any{
			"subject": "crash:" + uuid.NewString(), "kind": "crash", "projectId": "crash", "agentId": "agent",
			"stepId": uuid.NewString(), "snapshotId": uuid.NewString(), "maxAttempts": 100,
		}
		if code, err := c.call(ctx, "POST", url+"/v1/runs", c.runtime, body, &run); err != nil || code != 201 {
			continue
		}
		led.mu.Lock()
		led.runs[run.RunID] = true
		led.mu.Unlock()

		var cl claimed
		claim := map[string]any{"holderId": fmt.Sprintf("crash-%d", id), "releaseId": releaseID, "adapterVersion": adapterVersion,
			"modelProfileId": "m", "leaseSeconds": 2}
		code, err := c.call(ctx, "POST", url+"/v1/runs/claim", c.runtime, claim, &cl)
		if err != nil || code != 200 {
			continue
		}
		led.ack(func() {
			led.claims++
			if cl.Lease.FencingToken > led.tokens[cl.Run.RunID] {
				led.tokens[cl.Run.RunID] = cl.Lease.FencingToken
			}
		})
		attempt := url + "/v1/attempts/" + cl.Attempt.AttemptID.String()
		if code, err := c.call(ctx, "POST", attempt+"/heartbeat", c.runtime, map[string]any{"fencingToken": cl.Lease.FencingToken}, nil); err == nil && code == 200 {
			led.ack(func() { led.writes++ })
		}
		for seq := range 1 + rng.IntN(3) {
			hash := fmt.Sprintf("h-%s-%d", cl.Attempt.AttemptID, seq)
			cp := map[string]any{"fencingToken": cl.Lease.FencingToken, "sequence": seq, "phase": "acting",
				"adapterStateRef": "state://x", "adapterVersion": adapterVersion, "hash": hash}
			code, err := c.call(ctx, "POST", attempt+"/checkpoints", c.runtime, cp, nil)
			if err == nil && (code == 404 || code == 405) {
				rep.CheckpointsMissed = true
				break
			}
			if err == nil && code == 201 {
				led.ack(func() { led.checkpoints[fmt.Sprintf("%s/%d", cl.Attempt.AttemptID, seq)] = hash })
			}
		}
		if rng.IntN(5) == 0 {
			continue // leave the lease to expire: the reaper takes it back
		}
		done := map[string]any{"fencingToken": cl.Lease.FencingToken, "state": "succeeded"}
		if code, err := c.call(ctx, "POST", attempt+"/complete", c.runtime, done, nil); err == nil && code == 200 {
			led.ack(func() { led.completed[cl.Attempt.AttemptID] = "succeeded" })
		}
	}
}

func (l *ledger) ack(f func()) {
	l.mu.Lock()
	f()
	l.mu.Unlock()
}

// verify reads back every acknowledged run through the restarted server; completions and
// checkpoints are checked in the database (checkDatabase).
func (c *client) verify(ctx context.Context, url string, led *ledger, rep *Report) error {
	led.mu.Lock()
	defer led.mu.Unlock()
	for id := range led.runs {
		var run struct {
			Epoch int64  `json:"epoch"`
			State string `json:"state"`
		}
		code, err := c.call(ctx, "GET", url+"/v1/runs/"+id.String(), c.admin, nil, &run)
		if err != nil {
			return fmt.Errorf("read run: %w", err)
		}
		if code != 200 {
			rep.Lost = append(rep.Lost, "run "+id.String())
			continue
		}
		if run.Epoch < led.tokens[id] {
			rep.EpochRegressions++
		}
	}
	return nil
}

// checkDatabase opens the database file beside the running server and checks what only
// the rows can tell: attempts and runs agree, acknowledged completions and checkpoints are
// there, and no lease outlived its time.
func checkDatabase(ctx context.Context, path string, led *ledger, rep *Report) error {
	db, err := sqldb.Open(ctx, sqldb.Config{DSN: path})
	if err != nil {
		return err
	}
	defer db.Close()
	return db.Read(ctx, sqldb.MaintenanceScope(), func(tx *sqldb.Tx) error {
		now, err := tx.Now(ctx)
		if err != nil {
			return err
		}
		var stuck int
		if err := tx.GetContext(ctx, &stuck, `SELECT COUNT(*) FROM Runs WHERE State = 1 AND LeasedUntil < ?1`,
			tx.Dialect.Time(now.Add(-time.Second))); err != nil {
			return err
		}
		rep.StuckLeases = stuck
		led.mu.Lock()
		defer led.mu.Unlock()
		for id, state := range led.completed {
			var got int
			if err := tx.GetContext(ctx, &got, `SELECT State FROM ExecutionAttempts WHERE AttemptId = ?1`, id); err != nil {
				rep.Lost = append(rep.Lost, "completion of attempt "+id.String())
				continue
			}
			if state == "succeeded" && got != 1 {
				rep.Lost = append(rep.Lost, fmt.Sprintf("completion of attempt %s (state %d)", id, got))
			}
		}
		for key, hash := range led.checkpoints {
			var attempt string
			var seq int
			if _, err := fmt.Sscanf(filepath.ToSlash(key), "%36s/%d", &attempt, &seq); err != nil {
				return fmt.Errorf("checkpoint key %q: %w", key, err)
			}
			var got string
			err := tx.GetContext(ctx, &got, `SELECT Hash FROM Checkpoints WHERE AttemptId = ?1 AND Sequence = ?2`, attempt, seq)
			if err != nil || got != hash {
				rep.Lost = append(rep.Lost, "checkpoint "+key)
			}
		}
		return nil
	})
}

func disagreements(ctx context.Context, path string) (int, error) {
	db, err := sqldb.Open(ctx, sqldb.Config{DSN: path})
	if err != nil {
		return 0, err
	}
	defer db.Close()
	return runs.NewService(db, runs.DefaultConfig(), nil).Disagreements(ctx)
}

// start runs `ledger serve` on db with the crash test's flags and without the rate limit or
// in-flight cap, which would refuse the load the test needs acknowledged.
func start(ctx context.Context, bin, db string, flags ...string) (*serveproc.Server, error) {
	return serveproc.Start(ctx, bin, db, time.Minute, append([]string{"--rate-limit", "0", "--max-inflight", "0"}, flags...)...)
}
