package web

import (
	"net/http/httptest"
	"testing"
)

// TestClientAddressTrustsOnlyListedProxies: X-Forwarded-For names the client only when the
// TCP peer is a listed proxy, and then the nearest address that is not one; with no proxies
// listed the header is ignored, whoever sends it.
func TestClientAddressTrustsOnlyListedProxies(t *testing.T) {
	t.Parallel()
	proxies, err := ParseCIDRs("10.0.0.0/8, 192.0.2.10")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name    string
		trusted bool
		peer    string
		xff     string
		want    string
	}{
		{"NoProxiesIgnoresTheHeader", false, "203.0.113.5", "198.51.100.1", "203.0.113.5"},
		{"NoProxiesIgnoresTheHeaderFromPrivatePeers", false, "10.1.2.3", "198.51.100.1", "10.1.2.3"},
		{"TrustedProxyNamesTheClient", true, "10.1.2.3", "198.51.100.1", "198.51.100.1"},
		{"NearestUntrustedAddressWins", true, "10.1.2.3", "6.6.6.6, 198.51.100.1, 192.0.2.10", "198.51.100.1"},
		{"UntrustedPeerIsTheClient", true, "203.0.113.5", "198.51.100.1", "203.0.113.5"},
		{"LoopbackIsNotTrustedUnlessListed", true, "127.0.0.1", "198.51.100.1", "127.0.0.1"},
		{"TrustedProxyWithoutHeader", true, "10.1.2.3", "", "10.1.2.3"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var list = proxies
			if !c.trusted {
				list = nil
			}
			r := httptest.NewRequest("GET", "/", nil)
			r.RemoteAddr = c.peer + ":5555"
			if c.xff != "" {
				r.Header.Set("X-Forwarded-For", c.xff)
			}
			if got := ipExtractor(list)(r); got != c.want {
				t.Fatalf("client address %q, want %q", got, c.want)
			}
		})
	}
}

func TestParseCIDRs(t *testing.T) {
	t.Parallel()
	got, err := ParseCIDRs(" 10.0.0.0/8 ,,2001:db8::/32, 192.0.2.1, ::1 ")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"10.0.0.0/8", "2001:db8::/32", "192.0.2.1/32", "::1/128"}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for i := range want {
		if got[i].String() != want[i] {
			t.Errorf("entry %d: %s, want %s", i, got[i], want[i])
		}
	}
	for _, bad := range []string{"10.0.0.0/33", "not-an-ip", "10.0.0/8"} {
		if _, err := ParseCIDRs(bad); err == nil {
			t.Errorf("ParseCIDRs(%q) accepted it", bad)
		}
	}
	if got, err := ParseCIDRs(""); err != nil || len(got) != 0 {
		t.Errorf("empty list: %v %v", got, err)
	}
}
