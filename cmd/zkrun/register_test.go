package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zkrecipes/zkrecipes/discovery"
	"github.com/zkrecipes/zkrecipes/recipes/zktest"
)

// register keeps the command registered as an instance (Curator's JSON,
// the payload typed for Java readers) while it runs, and unregisters it
// when it ends; the command sees its node, path and id.
func TestRegister(t *testing.T) {
	zkc := zkServer(t)
	obs := observer(t, zkc)
	base := newPath() + "/services"
	marker := filepath.Join(t.TempDir(), "m")
	child := []string{"sh", "-c", `echo "$ZKRUN_NODE $ZKRUN_PATH $ZKRUN_ID" > "$1.tmp" && mv "$1.tmp" "$1"; read x; exit 3`, "child", marker}
	p := zkrun(t, zkc, append([]string{"register", "-base", base, "-port", "8080", "-id", "inst-1", "-address", "10.1.2.3",
		"-payload", `{"zone":"eu"}`, "-payload-class", "com.example.Details", "orders", "--"}, child...)...)
	var data []byte
	zktest.Eventually(t, 60*time.Second, "the child's marker", func() bool {
		var err error
		data, err = os.ReadFile(marker)
		return err == nil
	})
	f := strings.Fields(string(data))
	if len(f) != 3 || f[0] != base+"/orders/inst-1" || f[1] != base+"/orders" || f[2] != "inst-1" {
		t.Fatalf("marker %q", data)
	}
	d, err := discovery.New(obs, base)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := d.Start(ctx); err != nil {
		t.Fatal(err)
	}
	in, err := d.QueryForInstance(ctx, "orders", "inst-1")
	if err != nil || in == nil {
		t.Fatalf("instance: %v, %v", in, err)
	}
	if in.Port != 8080 || in.Address != "10.1.2.3" || in.ServiceType != discovery.Dynamic ||
		in.PayloadClass() != "com.example.Details" || in.BuildURI(nil) != "http://10.1.2.3:8080" {
		t.Fatalf("instance %+v (payload %s)", in, in.Payload)
	}
	p.release()
	if code := p.wait(t); code != 3 {
		t.Fatalf("exit %d, want the command's 3", code)
	}
	waitChildren(t, obs, base+"/orders", 0)

	// Usage errors.
	for _, args := range [][]string{
		{"register", "a/b", "--", "true"},
		{"register", "-payload", "{", "svc", "--", "true"},
		{"register", "-try", "svc", "--", "true"},
		{"register", "-port", "70000", "svc", "--", "true"},
	} {
		if code := zkrun(t, zkc, args...).wait(t); code != ExitUsage {
			t.Errorf("%v: exit %d, want %d", args, code, ExitUsage)
		}
	}
}
