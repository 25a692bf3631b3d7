package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// Row statuses.
const (
	StatusOK          = "ok"
	StatusUnavailable = "unavailable" // the server does not serve a route the workload needs
	StatusSkipped     = "skipped"     // not run in this mode (depth against --url)
	StatusFailed      = "failed"      // the workload's own setup failed (the reason is in Note)
)

// Reference workload names.
const (
	RefDriver  = "driver-baseline"
	RefCeiling = "http-ceiling"
)

// Result is one row of the report: one workload (or one part of it) under one durability
// setting. Latencies are those of successful operations; Errors counts the failed ones by
// problem code (or "timeout", "transport", "http_<status>").
type Result struct {
	Workload string `json:"workload"`
	// Part names a history row (list, timeline, append) or a noisy one (a-alone, a,
	// b-append, b-poll); Queued the depth row's queue.
	Part      string           `json:"part,omitempty"`
	Queued    int              `json:"queued,omitempty"`
	Sync      string           `json:"sync"`
	Clients   int              `json:"clients"`
	Status    string           `json:"status"`
	Ops       int64            `json:"ops"`
	Seconds   float64          `json:"seconds"`
	OpsPerSec float64          `json:"opsPerSec"`
	P50Ms     float64          `json:"p50Ms"`
	P95Ms     float64          `json:"p95Ms"`
	P99Ms     float64          `json:"p99Ms"`
	MaxMs     float64          `json:"maxMs"`
	Errors    map[string]int64 `json:"errors"`
	// RSSMiB is the largest server resident memory seen while the row ran (0: unknown).
	RSSMiB float64 `json:"rssMiB"`
	// RunsPerSec is cycle's whole runs (enqueue to complete) per second.
	RunsPerSec float64 `json:"runsPerSec,omitempty"`
	// SeedSeconds is how long depth took to fill its queue.
	SeedSeconds float64 `json:"seedSeconds,omitempty"`
	// The references this row is compared with (same clients, same durability, same run)
	// and the ratios of OpsPerSec to them.
	DriverOpsPerSec  float64 `json:"driverOpsPerSec,omitempty"`
	CeilingOpsPerSec float64 `json:"ceilingOpsPerSec,omitempty"`
	XDriver          float64 `json:"xDriver,omitempty"`
	XCeiling         float64 `json:"xCeiling,omitempty"`
	Note             string  `json:"note,omitempty"`
	// WorkloadClients is the whole workload's clients when the row is a part of it
	// (history): the references it is compared with ran with that many.
	WorkloadClients int `json:"workloadClients,omitempty"`
	// P99VsAlone is, for noisy/a, tenant A's p99 while tenant B floods over A's p99 alone
	// in the same run (the target is at most 2).
	P99VsAlone float64 `json:"p99VsAlone,omitempty"`
}

// Label is the row's name in the table.
func (r Result) Label() string {
	switch {
	case r.Part != "":
		return r.Workload + "/" + r.Part
	case r.Queued > 0:
		return r.Workload + "/" + shortCount(r.Queued)
	}
	return r.Workload
}

// fill sets the row's figures from a recorder's samples over a window of d.
func (r *Result) fill(h Histogram, errs map[string]int64, d time.Duration) {
	r.Ops = h.Count()
	r.Seconds = round(d.Seconds(), 3)
	if d > 0 {
		r.OpsPerSec = round(float64(r.Ops)/d.Seconds(), 1)
	}
	r.P50Ms, r.P95Ms, r.P99Ms = ms(h.Percentile(50)), ms(h.Percentile(95)), ms(h.Percentile(99))
	r.MaxMs = ms(h.Max())
	if errs == nil {
		errs = map[string]int64{}
	}
	r.Errors = errs
	if r.Status == "" {
		r.Status = StatusOK
	}
}

// compare sets the row's ratios to the references.
func (r *Result) compare(driver, ceiling float64) {
	r.DriverOpsPerSec, r.CeilingOpsPerSec = driver, ceiling
	if driver > 0 {
		r.XDriver = round(r.OpsPerSec/driver, 3)
	}
	if ceiling > 0 {
		r.XCeiling = round(r.OpsPerSec/ceiling, 3)
	}
}

func ms(d time.Duration) float64 { return round(float64(d)/float64(time.Millisecond), 3) }

func round(v float64, places int) float64 {
	p := 1.0
	for range places {
		p *= 10
	}
	if v < 0 {
		return -float64(int64(-v*p+0.5)) / p
	}
	return float64(int64(v*p+0.5)) / p
}

func shortCount(n int) string {
	switch {
	case n >= 1_000_000 && n%1_000_000 == 0:
		return strconv.Itoa(n/1_000_000) + "M"
	case n >= 1_000 && n%1_000 == 0:
		return strconv.Itoa(n/1_000) + "k"
	}
	return strconv.Itoa(n)
}

// Report is the whole run: how it was made and its rows.
type Report struct {
	Mode        string    `json:"mode"` // local or remote
	URL         string    `json:"url,omitempty"`
	CPUs        int       `json:"cpus"`
	Started     time.Time `json:"started"`
	DurationSec float64   `json:"durationSeconds"` // each workload's measured window
	Results     []Result  `json:"results"`
}

// WriteJSON writes the report as one indented JSON document.
func (rep *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(rep)
}

// WriteTable writes the report as an aligned text table, references included.
func (rep *Report) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "workload\tsync\tclients\tops/s\tp50 ms\tp95 ms\tp99 ms\terrors\tRSS MiB\tx driver\tx ceiling\t")
	var notes []string
	for _, r := range rep.Results {
		cols := []string{r.Label(), r.Sync, strconv.Itoa(r.Clients)}
		if r.Status != StatusOK {
			cols = append(cols, r.Status, "-", "-", "-", "-", "-", "-", "-")
		} else {
			cols = append(cols, num(r.OpsPerSec, 0), num(r.P50Ms, 2), num(r.P95Ms, 2), num(r.P99Ms, 2),
				errorText(r.Errors), dash(r.RSSMiB, 0), dash(r.XDriver, 2), dash(r.XCeiling, 2))
		}
		fmt.Fprintln(tw, strings.Join(cols, "\t")+"\t")
		if n := r.noteText(); n != "" {
			notes = append(notes, fmt.Sprintf("%s [%s]: %s", r.Label(), r.Sync, n))
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(notes) > 0 {
		fmt.Fprintln(w)
		for _, n := range notes {
			fmt.Fprintln(w, n)
		}
	}
	return nil
}

func (r Result) noteText() string {
	var parts []string
	if r.RunsPerSec > 0 {
		parts = append(parts, fmt.Sprintf("%.0f runs/s", r.RunsPerSec))
	}
	if r.SeedSeconds > 0 {
		parts = append(parts, fmt.Sprintf("seeded in %.1fs", r.SeedSeconds))
	}
	if r.Note != "" {
		parts = append(parts, r.Note)
	}
	return strings.Join(parts, "; ")
}

func num(v float64, places int) string { return strconv.FormatFloat(v, 'f', places, 64) }

func dash(v float64, places int) string {
	if v == 0 {
		return "-"
	}
	return num(v, places)
}

// errorText is "0", or the failed operations by code in name order ("stale_lease=2 timeout=1").
func errorText(errs map[string]int64) string {
	if len(errs) == 0 {
		return "0"
	}
	var b strings.Builder
	for i, k := range sortedKeys(errs) {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%s=%d", k, errs[k])
	}
	return b.String()
}
