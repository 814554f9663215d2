#!/usr/bin/env bash
# The project's whole test suite: formatting, vet, module tidiness, the race-
# enabled tests (every skip listed with its reason), the allocation tests
# without -race, then every fuzz target briefly. Run from anywhere:
#   ./scripts/test.sh            (FUZZTIME=10s per target by default)
set -euo pipefail
cd "$(dirname "$0")/.."
FUZZTIME=${FUZZTIME:-10s}

echo "== gofmt"
bad=$(gofmt -l $(git ls-files '*.go'))
if [ -n "$bad" ]; then echo "gofmt would change:"; echo "$bad"; exit 1; fi

echo "== go vet"
go vet ./...

echo "== go mod tidy"
cp go.mod /tmp/oxefs-go.mod.$$; cp go.sum /tmp/oxefs-go.sum.$$
go mod tidy
if ! cmp -s go.mod /tmp/oxefs-go.mod.$$ || ! cmp -s go.sum /tmp/oxefs-go.sum.$$; then
  echo "go mod tidy changed go.mod/go.sum:"; git diff -- go.mod go.sum
  cp /tmp/oxefs-go.mod.$$ go.mod; cp /tmp/oxefs-go.sum.$$ go.sum
  rm -f /tmp/oxefs-go.mod.$$ /tmp/oxefs-go.sum.$$
  exit 1
fi
rm -f /tmp/oxefs-go.mod.$$ /tmp/oxefs-go.sum.$$

# go test hides t.Skip messages without -v: the summary prints every
# skipped test with its reason, the whole output of every failure, each
# package's result and "N passed, N failed, N skipped".
go build -o /tmp/oxefs-testsummary.$$ ./scripts/testsummary
trap 'rm -f /tmp/oxefs-testsummary.$$' EXIT

echo "== go test -race"
go test -race -count=1 -json ./... | /tmp/oxefs-testsummary.$$

# Allocation counts mean nothing under the race detector, so the
# TestXxxAllocs tests skip themselves there; run them without it.
echo "== allocation tests (no -race)"
alloc_pkgs=$(go list -f '{{.ImportPath}} {{.Dir}}' ./... | while read -r pkg dir; do
  if grep -qs '^func Test[A-Za-z0-9_]*Allocs(' "$dir"/*_test.go; then echo "$pkg"; fi
done)
if [ -z "$alloc_pkgs" ]; then echo "no TestXxxAllocs tests found"; exit 1; fi
go test -count=1 -run 'Allocs$' -json $alloc_pkgs | /tmp/oxefs-testsummary.$$

echo "== fuzz (${FUZZTIME} each)"
for pkg in $(go list ./...); do
  dir=$(go list -f '{{.Dir}}' "$pkg")
  for target in $(grep -ho '^func Fuzz[A-Za-z0-9_]*' "$dir"/*_test.go 2>/dev/null | sed 's/^func //' | sort -u); do
    echo "-- $pkg $target"
    go test -run='^$' -fuzz="^${target}\$" -fuzztime="$FUZZTIME" "$pkg" > /tmp/oxefs-fuzz.log 2>&1 || { cat /tmp/oxefs-fuzz.log; exit 1; }
    tail -1 /tmp/oxefs-fuzz.log
  done
done
echo "== all tests passed"
