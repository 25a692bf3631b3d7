package releases_test

import (
	"testing"

	"github.com/ledger-dev/ledger/internal/releases"
)

func TestManifestHash(t *testing.T) {
	t.Parallel()
	// Expected values computed independently: printf '<canonical form>' | sha256sum.
	for in, want := range map[string]string{
		`[]`:                                "4f53cda18c2baa0c0354bb5f9a3ecbe5ed12ab4d8e11ba873c2f11161202b945",
		`[ {"a": 1} ]`:                      "b713f6d2a989e907c58516a7c8bb487792c8785ddbf367b80dc774bf33b85a85",
		`[{"b":[true,null,"x"],"a":1.0E0}]`: "67c169a7a6641ec83113cbfc14c5090580566381142d9843a144ed5b0fc379bd",
	} {
		c, err := releases.Canonicalize([]byte(in))
		if err != nil {
			t.Fatal(err)
		}
		if got := releases.ManifestHash(c); got != want {
			t.Errorf("ManifestHash(%s) = %s, want %s", in, got, want)
		}
	}
}
