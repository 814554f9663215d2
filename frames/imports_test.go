package frames

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestImportsNothingElseOfOxefs: package frames and its subpackages import
// no other package of the module (see the package doc).
func TestImportsNothingElseOfOxefs(t *testing.T) {
	const module = "github.com/oxefs/oxefs/"
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	sub, _ := filepath.Glob("*/*.go")
	files = append(files, sub...)
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			if strings.HasPrefix(path, module) && !strings.HasPrefix(path, module+"frames/") {
				t.Errorf("%s imports %s: frames may import only its own subpackages", name, path)
			}
		}
	}
}
