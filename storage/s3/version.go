package s3

import (
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"regexp"
	"strings"
)

// Version is what Stat says of one object's bytes, and what OpenVersion
// reads again: ObjectInfo.Version is its String.
type Version struct {
	// ID is the object's version id in a versioned bucket, else "".
	ID string
	// ETag is the entity tag, without quotes: an MD5 of the bytes for a
	// single-part upload without KMS or customer keys, otherwise an opaque
	// tag that changes with each upload.
	ETag string
	// MD5 is the hex MD5 of the whole object where the ETag is one (see
	// ETag), else "".
	MD5 string
	// CRC32C is the hex CRC32C (Castagnoli) of the whole object where S3
	// publishes one (objects uploaded with that checksum), else "".
	CRC32C string
}

// String is the version as ObjectInfo.Version carries it: the fields that
// are set, as "version-id V etag E md5 M crc32c C".
func (v Version) String() string {
	var parts []string
	for _, f := range []struct{ key, val string }{{"version-id", v.ID}, {"etag", v.ETag}, {"md5", v.MD5}, {"crc32c", v.CRC32C}} {
		if f.val != "" {
			parts = append(parts, f.key+" "+f.val)
		}
	}
	return strings.Join(parts, " ")
}

// ParseVersion reads a version that Stat made (Version.String). It needs
// an ETag.
func ParseVersion(s string) (Version, error) {
	var v Version
	f := strings.Fields(s)
	if len(f)%2 != 0 {
		return v, fmt.Errorf("version %q is not an S3 version (want \"[version-id V] etag E [md5 M] [crc32c C]\")", s)
	}
	for i := 0; i < len(f); i += 2 {
		switch f[i] {
		case "version-id":
			v.ID = f[i+1]
		case "etag":
			v.ETag = f[i+1]
		case "md5":
			v.MD5 = f[i+1]
		case "crc32c":
			v.CRC32C = f[i+1]
		default:
			return Version{}, fmt.Errorf("version %q is not an S3 version: unknown field %q (valid: version-id, etag, md5, crc32c)", s, f[i])
		}
	}
	if v.ETag == "" {
		return Version{}, fmt.Errorf("version %q is not an S3 version: no etag", s)
	}
	return v, nil
}

var md5Hex = regexp.MustCompile(`^[0-9a-f]{32}$`)

// isMD5 reports whether an ETag has the form of an MD5 (a multipart
// upload's has a "-N" suffix).
func isMD5(etag string) bool { return md5Hex.MatchString(etag) }

// crc32cHex turns the base64 big-endian CRC32C that S3 publishes into
// 8 hex digits, as GCS versions carry it; "" when there is none or it is
// not a whole-object CRC32C.
func crc32cHex(b64 string) string {
	raw, err := base64.StdEncoding.DecodeString(b64)
	if err != nil || len(raw) != 4 {
		return ""
	}
	return fmt.Sprintf("%08x", binary.BigEndian.Uint32(raw))
}
