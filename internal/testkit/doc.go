// Package testkit holds the test helpers that the tests of several oxefs
// packages share: finding and loading the committed fixtures
// (testdata/manifest.json, the RLDS datasets), copying a fixture directory
// to edit it, in-process fake GCS (fake-gcs-server) and S3 (gofakes3)
// servers reached through the real clients, proxies that make a source
// hang or fail, and small waits and skips.
//
// It is imported only from _test.go files. It imports no other oxefs
// package (internal/pythontest aside), so any package's tests may use it
// without an import cycle and it never drags production code into a test
// of a lower layer.
package testkit
