package apicheck

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path"
	"path/filepath"
	"strconv"
	"strings"
)

// underlying returns the spec to print for s, declared in file f of the
// package under root: s itself, unless s defines a type on a type of
// another package of the module (type Client engine.Client). That one is
// printed as Go's cmd/api prints it, by its underlying type (type Client
// struct), since the other package's name says nothing to a user who
// cannot import it: the spec returned has s's name and the other
// package's type, with only its exported fields kept and every type in
// them qualified by that package's name.
func underlying(root string, f *ast.File, s *ast.TypeSpec) (*ast.TypeSpec, error) {
	if s.Assign.IsValid() || s.TypeParams != nil {
		return s, nil
	}
	t, file, dir := s.Type, f, ""
	for hops := 0; ; hops++ {
		var name string
		switch e := t.(type) {
		case *ast.SelectorExpr:
			pkg, _ := e.X.(*ast.Ident)
			if dir = moduleImport(file, pkg); dir == "" {
				return s, nil // another module's type: its name is public
			}
			name = e.Sel.Name
		case *ast.Ident: // in the other package, another type of its own
			if file != f && !predeclared[e.Name] {
				name = e.Name
			}
		}
		if name == "" {
			if file == f {
				return s, nil
			}
			t = exportedOnly(t)
			qualify(t, file.Name.Name)
			return &ast.TypeSpec{Name: s.Name, Type: t}, nil
		}
		if hops > 10 {
			return nil, fmt.Errorf("apicheck: type %s: too many hops to its underlying type", s.Name.Name)
		}
		next, nextFile, err := findType(filepath.Join(root, filepath.FromSlash(dir)), name)
		if err != nil {
			return nil, fmt.Errorf("apicheck: type %s: %w", s.Name.Name, err)
		}
		if next.TypeParams != nil || next.Assign.IsValid() {
			return s, nil
		}
		t, file = next.Type, nextFile
	}
}

// moduleImport returns the directory (relative to the module root) of the
// package that file imports as name, when it is a package of the module;
// "" otherwise.
func moduleImport(file *ast.File, name *ast.Ident) string {
	if name == nil {
		return ""
	}
	for _, imp := range file.Imports {
		p, err := strconv.Unquote(imp.Path.Value)
		if err != nil || !strings.HasPrefix(p, Module+"/") {
			continue
		}
		as := path.Base(p)
		if imp.Name != nil {
			as = imp.Name.Name
		}
		if as == name.Name {
			return strings.TrimPrefix(p, Module+"/")
		}
	}
	return ""
}

// findType parses the package in dir (test files left out) and returns
// the declaration of the type named name, and its file.
func findType(dir, name string) (*ast.TypeSpec, *ast.File, error) {
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, dir, func(fi fs.FileInfo) bool {
		return !strings.HasSuffix(fi.Name(), "_test.go")
	}, parser.SkipObjectResolution)
	if err != nil {
		return nil, nil, err
	}
	for _, pkg := range pkgs {
		for _, f := range pkg.Files {
			for _, decl := range f.Decls {
				if d, ok := decl.(*ast.GenDecl); ok && d.Tok == token.TYPE {
					for _, spec := range d.Specs {
						if ts := spec.(*ast.TypeSpec); ts.Name.Name == name {
							return ts, f, nil
						}
					}
				}
			}
		}
	}
	return nil, nil, fmt.Errorf("no type %s in %s", name, dir)
}

// exportedOnly drops a struct's unexported fields (embedded ones by their
// type's name), which no user of the defining package could name.
func exportedOnly(t ast.Expr) ast.Expr {
	st, ok := t.(*ast.StructType)
	if !ok {
		return t
	}
	var kept []*ast.Field
	for _, f := range st.Fields.List {
		var names []*ast.Ident
		for _, n := range f.Names {
			if n.IsExported() {
				names = append(names, n)
			}
		}
		if len(f.Names) == 0 && ast.IsExported(embeddedName(f.Type)) || len(names) > 0 {
			kept = append(kept, &ast.Field{Names: names, Type: f.Type})
		}
	}
	return &ast.StructType{Fields: &ast.FieldList{List: kept}}
}

// embeddedName is the field name of an embedded type: T for T, *T, p.T, T[X].
func embeddedName(t ast.Expr) string {
	switch e := t.(type) {
	case *ast.StarExpr:
		return embeddedName(e.X)
	case *ast.SelectorExpr:
		return e.Sel.Name
	case *ast.IndexExpr:
		return embeddedName(e.X)
	case *ast.IndexListExpr:
		return embeddedName(e.X)
	case *ast.Ident:
		return e.Name
	}
	return ""
}

// qualify names pkg before every type of pkg's own in t (a freshly parsed
// tree, changed in place), so that t prints as it reads outside pkg.
func qualify(t ast.Node, pkg string) {
	ast.Inspect(t, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.SelectorExpr:
			return false // another package's name already
		case *ast.Field: // names of fields, methods, parameters: not types
			qualify(n.Type, pkg)
			return false
		case *ast.Ident:
			if !predeclared[n.Name] {
				n.Name = pkg + "." + n.Name
			}
		}
		return true
	})
}

var predeclared = map[string]bool{
	"any": true, "bool": true, "byte": true, "comparable": true, "complex64": true, "complex128": true,
	"error": true, "float32": true, "float64": true, "int": true, "int8": true, "int16": true,
	"int32": true, "int64": true, "rune": true, "string": true, "uint": true, "uint8": true,
	"uint16": true, "uint32": true, "uint64": true, "uintptr": true,
}
