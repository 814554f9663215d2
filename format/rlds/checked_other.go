//go:build !linux

package rlds

import "io/fs"

// fileIDOf: without Linux's stat, no file has an identity here, and every
// load checks its record's CRC.
func fileIDOf(fs.FileInfo) (fileID, bool) { return fileID{}, false }
