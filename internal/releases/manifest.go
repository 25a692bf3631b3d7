package releases

import (
	"crypto/sha256"
	"encoding/hex"

	"github.com/ledger-dev/ledger/internal/jcs"
)

// Canonicalize returns the RFC 8785 canonical form of a release's contentRefs (jcs), or a
// *jcs.CanonicalError when the text has none.
func Canonicalize(contentRefs []byte) ([]byte, error) { return jcs.Canonicalize(contentRefs) }

// ManifestHash returns the lowercase hex SHA-256 of canonical, the canonical form of a
// release's contentRefs.
func ManifestHash(canonical []byte) string {
	sum := sha256.Sum256(canonical)
	return hex.EncodeToString(sum[:])
}
