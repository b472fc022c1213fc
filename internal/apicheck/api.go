// Package apicheck lists the exported API of the module's public packages,
// one declaration a line, as Go's own api/*.txt files do, so that the
// checked-in list (api/zkrecipes.txt) shows every change to the public
// surface in review. It reads the source only: no type checking, no
// dependency.
package apicheck

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/printer"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Module is the module path the package paths are printed under.
const Module = "github.com/zkrecipes/zkrecipes"

// skipDir reports whether the directory (relative to the module root)
// holds no public package: internal code, programs, tests' data.
func skipDir(rel string) bool {
	for _, part := range strings.Split(rel, string(filepath.Separator)) {
		switch part {
		case "internal", "testdata", "examples", "cmd", "chaos", "api", "docs", "scripts":
			return true
		}
		if strings.HasPrefix(part, ".") || strings.HasPrefix(part, "_") {
			return true
		}
	}
	return false
}

// List returns the sorted API lines of every public package under root,
// the module's root directory.
func List(root string) ([]string, error) {
	var lines []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if rel != "." && skipDir(rel) {
			return filepath.SkipDir
		}
		pkgLines, err := listDir(root, path, filepath.ToSlash(rel))
		lines = append(lines, pkgLines...)
		return err
	})
	slices.Sort(lines)
	return slices.Compact(lines), err
}

func listDir(root, dir, rel string) ([]string, error) {
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, dir, func(fi fs.FileInfo) bool {
		return !strings.HasSuffix(fi.Name(), "_test.go")
	}, parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	var out []string
	for name, pkg := range pkgs {
		if name == "main" {
			continue
		}
		path := Module
		if rel != "." {
			path += "/" + rel
		}
		prefix := "pkg " + path + ", "
		files := make([]string, 0, len(pkg.Files))
		for f := range pkg.Files {
			files = append(files, f)
		}
		slices.Sort(files)
		for _, f := range files {
			for _, decl := range pkg.Files[f].Decls {
				lines, err := declLines(fset, root, pkg.Files[f], decl)
				if err != nil {
					return nil, err
				}
				for _, l := range lines {
					out = append(out, prefix+l)
				}
			}
		}
	}
	return out, nil
}

// declLines returns the API lines of decl, a declaration of file f of a
// package under root, the module's root directory.
func declLines(fset *token.FileSet, root string, f *ast.File, decl ast.Decl) ([]string, error) {
	switch d := decl.(type) {
	case *ast.FuncDecl:
		if !d.Name.IsExported() {
			return nil, nil
		}
		sig := signature(fset, d.Type)
		if d.Recv == nil {
			return []string{"func " + d.Name.Name + typeParams(fset, d.Type.TypeParams) + sig}, nil
		}
		recv := expr(fset, d.Recv.List[0].Type)
		if !ast.IsExported(strings.TrimLeft(baseName(recv), "*")) {
			return nil, nil
		}
		return []string{fmt.Sprintf("method (%s) %s%s", recv, d.Name.Name, sig)}, nil
	case *ast.GenDecl:
		var out []string
		for _, spec := range d.Specs {
			switch s := spec.(type) {
			case *ast.TypeSpec:
				if !s.Name.IsExported() {
					continue
				}
				u, err := underlying(root, f, s)
				if err != nil {
					return nil, err
				}
				out = append(out, typeLines(fset, u)...)
			case *ast.ValueSpec:
				kind := "var"
				if d.Tok == token.CONST {
					kind = "const"
				}
				for _, n := range s.Names {
					if !n.IsExported() {
						continue
					}
					l := kind + " " + n.Name
					if s.Type != nil {
						l += " " + expr(fset, s.Type)
					}
					out = append(out, l)
				}
			}
		}
		return out, nil
	}
	return nil, nil
}

// baseName strips type parameters from a receiver: "*List[T]" -> "*List".
func baseName(recv string) string {
	if i := strings.IndexByte(recv, '['); i >= 0 {
		return recv[:i]
	}
	return recv
}

func typeLines(fset *token.FileSet, s *ast.TypeSpec) []string {
	if !s.Name.IsExported() {
		return nil
	}
	name := s.Name.Name + typeParams(fset, s.TypeParams)
	if s.Assign.IsValid() {
		return []string{"type " + name + " = " + expr(fset, s.Type)}
	}
	switch t := s.Type.(type) {
	case *ast.StructType:
		out := []string{"type " + name + " struct"}
		for _, f := range t.Fields.List {
			ft := expr(fset, f.Type)
			if len(f.Names) == 0 { // embedded
				if ast.IsExported(strings.TrimLeft(ft, "*")) || strings.Contains(ft, ".") {
					out = append(out, "type "+s.Name.Name+" struct, embedded "+ft)
				}
				continue
			}
			for _, n := range f.Names {
				if n.IsExported() {
					out = append(out, "type "+s.Name.Name+" struct, "+n.Name+" "+ft)
				}
			}
		}
		return out
	case *ast.InterfaceType:
		out := []string{"type " + name + " interface"}
		for _, m := range t.Methods.List {
			if len(m.Names) == 0 {
				out = append(out, "type "+s.Name.Name+" interface, embedded "+expr(fset, m.Type))
				continue
			}
			for _, n := range m.Names {
				if n.IsExported() {
					out = append(out, "type "+s.Name.Name+" interface, "+n.Name+signature(fset, m.Type.(*ast.FuncType)))
				}
			}
		}
		return out
	}
	return []string{"type " + name + " " + expr(fset, s.Type)}
}

// typeParams prints a type's or a function's type parameters: "[T any]",
// "" for none.
func typeParams(fset *token.FileSet, fl *ast.FieldList) string {
	if fl == nil {
		return ""
	}
	var ps []string
	for _, f := range fl.List {
		names := make([]string, len(f.Names))
		for i, n := range f.Names {
			names[i] = n.Name
		}
		ps = append(ps, strings.Join(names, ", ")+" "+expr(fset, f.Type))
	}
	return "[" + strings.Join(ps, ", ") + "]"
}

// signature prints a function's parameters and results by type only, as
// Go's api files do: names may change without changing the API.
func signature(fset *token.FileSet, f *ast.FuncType) string {
	params := "(" + types(fset, f.Params) + ")"
	switch res := types(fset, f.Results); {
	case res == "":
		return params
	case f.Results.NumFields() == 1:
		return params + " " + res
	default:
		return params + " (" + res + ")"
	}
}

func types(fset *token.FileSet, fl *ast.FieldList) string {
	if fl == nil {
		return ""
	}
	var parts []string
	for _, f := range fl.List {
		t := expr(fset, f.Type)
		for range max(len(f.Names), 1) {
			parts = append(parts, t)
		}
	}
	return strings.Join(parts, ", ")
}

// expr prints an expression on one line.
func expr(fset *token.FileSet, e ast.Node) string {
	var b bytes.Buffer
	_ = printer.Fprint(&b, fset, e)
	return strings.Join(strings.Fields(b.String()), " ")
}

// Write writes lines to path, one a line.
func Write(path string, lines []string) error {
	return os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644)
}
