package runs

import (
	"sync"
)

// notifier wakes this replica's idle claimers of a tenant when work arrives. It replaces
// PostgreSQL's NOTIFY of seed 003; other replicas find the work by polling.
type notifier struct {
	mu sync.Mutex
	ch map[string]chan struct{}
}

func newNotifier() *notifier { return &notifier{ch: map[string]chan struct{}{}} }

// wait returns a channel closed at the tenant's next notify.
func (n *notifier) wait(tenant string) <-chan struct{} {
	n.mu.Lock()
	defer n.mu.Unlock()
	c, ok := n.ch[tenant]
	if !ok {
		c = make(chan struct{})
		n.ch[tenant] = c
	}
	return c
}

func (n *notifier) notify(tenant string) {
	n.mu.Lock()
	c, ok := n.ch[tenant]
	delete(n.ch, tenant)
	n.mu.Unlock()
	if ok {
		close(c)
	}
}
