package runs

import (
	"slices"
	"sync"
)

// notifier wakes this replica's idle claimers of a tenant when work arrives. It replaces
// PostgreSQL's NOTIFY of seed 003; other replicas find the work by polling.
//
// It wakes one claimer per notice, the one that has waited longest, not all of them: every
// woken claimer looks with a claim transaction on the database's writer, and with many
// idle claimers a wake-all turned each enqueue into as many looks, all but one empty. The
// wake is handed on so that none is lost: a claimer that leases a run hands it to the next
// (more may be queued: a notice can stand for several runs), one that leaves without
// looking hands it on untouched, and one whose filters (kinds, agents, projects) found
// nothing hands it on too, since the run may be another claimer's; the last hop count
// bounds that walk to the claimers that were waiting when the notice came. A claimer
// without filters that finds nothing ends the walk: no claimer could lease anything.
type notifier struct {
	mu      sync.Mutex
	waiting map[string][]*waiter // per tenant, longest waiting first
}

// waiter is one claimer's place in its tenant's line.
type waiter struct {
	// woken receives the wake's hop budget: how many more claimers a filtered claimer that
	// finds nothing may hand it to. It is sent at most once (the waiter leaves the line).
	woken chan int
}

func newNotifier() *notifier { return &notifier{waiting: map[string][]*waiter{}} }

// wait puts a claimer at the end of tenant's line; subscribe before looking, so a notice
// between the look and the wait is not missed.
func (n *notifier) wait(tenant string) *waiter {
	w := &waiter{woken: make(chan int, 1)}
	n.mu.Lock()
	n.waiting[tenant] = append(n.waiting[tenant], w)
	n.mu.Unlock()
	return w
}

// notify wakes the claimer of tenant that has waited longest, if any.
func (n *notifier) notify(tenant string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.wakeLocked(tenant, len(n.waiting[tenant]))
}

// handOn wakes the next claimer with what is left of a wake's hop budget.
func (n *notifier) handOn(tenant string, hops int) {
	if hops <= 0 {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	n.wakeLocked(tenant, hops)
}

func (n *notifier) wakeLocked(tenant string, hops int) {
	line := n.waiting[tenant]
	if len(line) == 0 {
		return
	}
	w := line[0]
	line[0] = nil
	if len(line) == 1 {
		delete(n.waiting, tenant)
	} else {
		n.waiting[tenant] = line[1:]
	}
	w.woken <- hops
}

// leave takes w out of tenant's line. When w was woken meanwhile, it reports the wake's
// hop budget and true: the caller either looks for it or hands it on.
func (n *notifier) leave(tenant string, w *waiter) (hops int, woken bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	line := n.waiting[tenant]
	if i := slices.Index(line, w); i >= 0 {
		line = slices.Delete(line, i, i+1)
		if len(line) == 0 {
			delete(n.waiting, tenant)
		} else {
			n.waiting[tenant] = line
		}
		return 0, false
	}
	select {
	case hops := <-w.woken:
		return hops, true
	default:
		return 0, false // not in the line and not woken: left before
	}
}

// quit takes w out of tenant's line for good, handing on a wake that came meanwhile.
func (n *notifier) quit(tenant string, w *waiter) {
	if hops, ok := n.leave(tenant, w); ok {
		n.handOn(tenant, hops)
	}
}

// waiters is how many claimers of tenant wait (tests).
func (n *notifier) waiters(tenant string) int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return len(n.waiting[tenant])
}
