package apicheck

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// The house limits on library code (tests, examples, cmd, the chaos
// suite and test support excluded): a function a reader takes in at
// once, a file a reader can hold.
const (
	maxFuncLines = 80
	maxFileLines = 500
)

// oversize lists library code allowed over the limits, each at the size
// it may not pass, with a comment saying why; it only shrinks, and an
// entry that fits the limits again must go. Empty: everything fits.
var oversize = map[string]int{}

var sizeSkip = []string{"examples", "cmd", "chaos", "internal/testutil", "internal/interop", "internal/apicheck", "testdata"}

// TestSizes fails when a library function passes maxFuncLines or a file
// maxFileLines, beyond the oversize list.
func TestSizes(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	found, err := sizes(root)
	if err != nil {
		t.Fatal(err)
	}
	for key, n := range found {
		switch allowed, ok := oversize[key]; {
		case !ok:
			t.Errorf("%s is %d lines: over the limit (functions %d, files %d); split it", key, n, maxFuncLines, maxFileLines)
		case n > allowed:
			t.Errorf("%s grew to %d lines (listed at %d, the limit is lower): split it", key, n, allowed)
		}
	}
	for key := range oversize {
		if _, ok := found[key]; !ok {
			t.Errorf("%s is within the limits now (or gone): take it off the oversize list", key)
		}
	}
}

// sizes returns the library's functions and files over the limits, keyed
// "func <file> <Recv.Name>" or "file <file>", with their lines.
func sizes(root string) (map[string]int, error) {
	found := map[string]int{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel != "." && (strings.HasPrefix(d.Name(), ".") || skipped(rel)) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, 0)
		if err != nil {
			return err
		}
		if n := fset.File(f.Pos()).LineCount(); n > maxFileLines {
			found["file "+rel] = n
		}
		for _, decl := range f.Decls {
			fd, ok := decl.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			if n := fset.Position(fd.End()).Line - fset.Position(fd.Pos()).Line + 1; n > maxFuncLines {
				found["func "+rel+" "+funcName(fd)] = n
			}
		}
		return nil
	})
	return found, err
}

func skipped(rel string) bool {
	for _, s := range sizeSkip {
		if rel == s || strings.HasPrefix(rel, s+"/") {
			return true
		}
	}
	return false
}

// funcName is Name, or Recv.Name for a method (the receiver's type name
// without pointer or type parameters).
func funcName(fd *ast.FuncDecl) string {
	if fd.Recv == nil || len(fd.Recv.List) == 0 {
		return fd.Name.Name
	}
	t := fd.Recv.List[0].Type
	if s, ok := t.(*ast.StarExpr); ok {
		t = s.X
	}
	switch x := t.(type) {
	case *ast.IndexExpr:
		t = x.X
	case *ast.IndexListExpr:
		t = x.X
	}
	if id, ok := t.(*ast.Ident); ok {
		return id.Name + "." + fd.Name.Name
	}
	return fd.Name.Name
}
