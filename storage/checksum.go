package storage

import (
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
)

// A source that publishes a checksum of each object's bytes (GCS: CRC32C)
// returns it in ObjectInfo.Checksum, and whatever keeps a whole copy of an
// object (the disk cache) checks the copy against it before keeping it: a
// byte flipped in transit, by a proxy or a middlebox, is then a transient
// fault, fetched again, never a permanent wrong copy. A source that
// publishes none (a local directory: a local file is its own truth) leaves
// Checksum zero, and its copies are kept as read.
//
// What is read whole and kept in memory instead (a dataset's metadata,
// through Copy and ReadFile) is checked by the backend's whole-object
// read against what the answer that carries the bytes publishes (see
// CheckWhole), so no extra request is made: GCS's client checks the
// CRC32C itself, as the S3 SDK does a published CRC32C; storage/s3 checks
// a single-part upload's ETag (MD5) otherwise, storage/hf an LFS file's
// SHA-256 or a git file's blob id.
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
	// GitBlob is a git blob id: the SHA-1 of "blob SIZE\x00" and the
	// bytes, what the Hugging Face Hub publishes of a file kept in git
	// (not LFS). Its hash needs the size first: see NewGitBlobHash.
	GitBlob = "git-blob"
)

// NewGitBlobHash returns a hash that computes the git blob id of size
// bytes written to it.
func NewGitBlobHash(size int64) hash.Hash {
	h := sha1.New()
	fmt.Fprintf(h, "blob %d\x00", size)
	return h
}

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

// CheckWhole returns a reader of rc, the stream of a whole object, that
// checks its bytes against c, the checksum the source published with that
// stream (a response header), when the stream ends: bytes that do not
// match end it with a transient *ChecksumError instead of io.EOF, so no
// caller takes them for the object, and a retrying copy (storage/retry)
// reads it again. h computes c's algorithm (nil: c.NewHash's). Backends
// wrap a whole-object read with it when their answer publishes a checksum
// that their client library does not check itself; what is read whole
// through Copy and ReadFile (a dataset's metadata) is then checked before
// any caller parses or saves it.
func CheckWhole(rc io.ReadCloser, object string, c Checksum, h hash.Hash) (io.ReadCloser, error) {
	if h == nil {
		var err error
		if h, err = c.NewHash(); err != nil {
			return nil, fmt.Errorf("%s: %w", object, err)
		}
	}
	return &checkedReader{rc: rc, object: object, want: c, h: h}, nil
}

// checkedReader is CheckWhole's reader.
type checkedReader struct {
	rc     io.ReadCloser
	object string
	want   Checksum
	h      hash.Hash
}

func (r *checkedReader) Read(p []byte) (int, error) {
	n, err := r.rc.Read(p)
	r.h.Write(p[:n])
	if err == io.EOF {
		if cerr := r.want.Check(r.object, r.h.Sum(nil)); cerr != nil {
			return n, Transient(cerr)
		}
	}
	return n, err
}

func (r *checkedReader) Close() error { return r.rc.Close() }
