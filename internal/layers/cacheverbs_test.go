package layers

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// cacheVerbs are the names of the methods that manage the disk cache
// rather than read through it: dropping what it keeps (Forget*, Evict),
// its failure memo (Remember, Remembered, and Identify, as the
// store's memo-consulting stat was once called), its settings. A format
// asks the store for bytes (store.Source) and reports bytes that failed
// its check (store.Suspect); what the cache keeps is the store's.
// (Remove is left out: a container's own, list.List.Remove, is no cache's;
// the disk cache's Cache.Remove is out of a format's reach, which may not
// import storage/diskcache.)
var cacheVerbs = []string{"Forget", "ForgetVersion", "ForgetRange", "ForgetRanges", "Evict",
	"Remember", "Remembered", "Identify", "SetVerifyRanges"}

// formatRoot is where the formats live.
const formatRoot = "format"

// cacheCalls returns, as file:line, every call of a method named in
// cacheVerbs in the Go code (tests left out) under formatRoot of the
// module at root. A call of a package's function of the same name
// (lru.Forget, of an imported package lru) is no method call and is left out.
func cacheCalls(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	fset := token.NewFileSet()
	err := walkGoFiles(root, filepath.Join(root, formatRoot), false, func(p, rel string) error {
		f, err := parser.ParseFile(fset, p, nil, 0)
		if err != nil {
			return err
		}
		pkgs := map[string]bool{}
		for _, im := range f.Imports {
			ip, _ := strconv.Unquote(im.Path.Value)
			name := path.Base(ip)
			if im.Name != nil {
				name = im.Name.Name
			}
			pkgs[name] = true
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok || !slices.Contains(cacheVerbs, sel.Sel.Name) {
				return true
			}
			if id, ok := sel.X.(*ast.Ident); ok && pkgs[id.Name] {
				return true // a package's function
			}
			out = append(out, fmt.Sprintf("%s:%d: %s", rel, fset.Position(call.Pos()).Line, exprText(sel)))
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestFormatsDoNotSteerTheCache: no file under format/ calls a method
// that manages the disk cache (cacheVerbs); formats read through
// store.Source and report bytes that failed their check as a
// store.Suspect, and the store decides what the cache keeps. A new call
// names its file and line.
func TestFormatsDoNotSteerTheCache(t *testing.T) {
	if got := cacheCalls(t, moduleRoot(t)); len(got) > 0 {
		t.Errorf("formats calling cache-management methods (read through store.Source; report a store.Suspect):\n%s",
			strings.Join(got, "\n"))
	}
}

// TestFormatsDoNotSteerTheCacheCatches plants cache-management calls in a
// module tree and checks that the rule reports them, and nothing else: a
// package function of the same name, a test file and a file outside
// format/ are left alone.
func TestFormatsDoNotSteerTheCacheCatches(t *testing.T) {
	root := t.TempDir()
	write := planter(t, root)
	write("go.mod", "module "+module+"\n")
	write("format/rlds/bad.go", "package rlds\n\nfunc (d *Dataset) f() error {\n\treturn d.src.ForgetVersion(\"a\", \"v\")\n}\n")
	write("format/lerobot/bad.go", "package lerobot\n\nimport lru \"example.com/lru\"\n\nfunc (d *Dataset) g() {\n\tlru.Forget(\"x\")\n\td.cache.Forget(\"k\")\n\t_ = d.src.Remembered(\"a\")\n}\n")
	write("format/rlds/ok_test.go", "package rlds\n\nfunc h(d *Dataset) { d.src.ForgetRange(o, 0, 1) }\n")
	write("store/ok.go", "package store\n\nfunc (s *Source) k() { s.cache.ForgetRanges(\"a\", \"v\") }\n")
	got := cacheCalls(t, root)
	want := []string{"format/lerobot/bad.go:7: d.cache.Forget", "format/lerobot/bad.go:8: d.src.Remembered", "format/rlds/bad.go:4: d.src.ForgetVersion"}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("the rule reported\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
