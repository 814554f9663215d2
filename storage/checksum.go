package storage

import (
	"crypto/md5"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"hash/crc32"
)

// A source that publishes a checksum of each object's bytes (GCS: CRC32C)
// returns it in ObjectInfo.Checksum, and whatever keeps a whole copy of an
// object (the disk cache) checks the copy against it before keeping it: a
// byte flipped in transit, by a proxy or a middlebox, is then a transient
// fault, fetched again, never a permanent wrong copy. A source that
// publishes none (a local directory: a local file is its own truth) leaves
// Checksum zero, and its copies are kept as read.
//
// A new backend plugs in by filling Checksum from what its protocol
// publishes, with one of the algorithms below (an S3 ETag of a single-part
// upload is the object's MD5; a Hugging Face LFS file's oid is its
// SHA-256), adding an algorithm here when it needs another. A checksum
// that is not of the whole object's bytes (an S3 multipart ETag, say) must
// not be published as one.

// Checksum algorithms.
const (
	CRC32C = "crc32c" // Castagnoli CRC-32, big-endian: GCS
	MD5    = "md5"
	SHA256 = "sha256"
)

// Checksum is what a source publishes of an object's whole bytes.
type Checksum struct {
	// Algorithm is one of CRC32C, MD5, SHA256; "" when the source
	// publishes none.
	Algorithm string
	// Sum is the digest in lowercase hex (a CRC32C as 8 digits,
	// big-endian).
	Sum string
}

// Published reports whether there is a checksum to check against.
func (c Checksum) Published() bool { return c.Algorithm != "" }

// CastagnoliTable is the CRC32C table (hardware-accelerated where the CPU
// has the instructions).
var CastagnoliTable = crc32.MakeTable(crc32.Castagnoli)

// NewHash returns a hash that computes c's algorithm.
func (c Checksum) NewHash() (hash.Hash, error) {
	switch c.Algorithm {
	case CRC32C:
		return crc32.New(CastagnoliTable), nil
	case MD5:
		return md5.New(), nil
	case SHA256:
		return sha256.New(), nil
	}
	return nil, fmt.Errorf("unknown checksum algorithm %q (known: %s, %s, %s)", c.Algorithm, CRC32C, MD5, SHA256)
}

// Check compares a digest of c's algorithm (a hash's Sum) with c: a
// mismatch is a *ChecksumError, matching ErrChecksum.
func (c Checksum) Check(object string, sum []byte) error {
	got := hex.EncodeToString(sum)
	if got == c.Sum {
		return nil
	}
	return &ChecksumError{Object: object, Algorithm: c.Algorithm, Got: got, Want: c.Sum}
}

// CRC32CChecksum is the Checksum of a CRC32C value.
func CRC32CChecksum(crc uint32) Checksum {
	return Checksum{Algorithm: CRC32C, Sum: fmt.Sprintf("%08x", crc)}
}

// ChecksumError is a copy of an object whose bytes do not match the
// checksum its source publishes: damaged in transit. It matches
// ErrChecksum; reading the object again should give the right bytes, so
// callers mark it Transient.
type ChecksumError struct {
	Object    string // LOCATION/NAME
	Algorithm string
	Got, Want string
}

func (e *ChecksumError) Error() string {
	return fmt.Sprintf("%s: the bytes read have %s %s, the source publishes %s: damaged in transit", e.Object, e.Algorithm, e.Got, e.Want)
}

// Is makes errors.Is(err, ErrChecksum) true.
func (e *ChecksumError) Is(target error) bool { return target == ErrChecksum }
