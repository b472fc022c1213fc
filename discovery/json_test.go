package discovery

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zkrecipes/zkrecipes/recipes"
)

var curatorDirs = []string{"testdata/curator-5.4", "testdata/curator-5.7.1"}

const goldenTime = 1698197224917

// details mirrors GenGolden.Details.
type details struct {
	Description string            `json:"description"`
	Weight      int               `json:"weight"`
	Meta        map[string]string `json:"meta"`
}

func mustPayload(t *testing.T, v any, class string) json.RawMessage {
	t.Helper()
	p, err := EncodePayload(v, class)
	require.NoError(t, err)
	return p
}

func tru() *bool  { b := true; return &b }
func fals() *bool { b := false; return &b }

// goInstances builds in Go the instances GenGolden.java builds in Java.
func goInstances(t *testing.T) map[string]*Instance {
	spring := MustParseURISpec("{scheme}://{address}:{port}")
	all := MustParseURISpec("{scheme}://{address}:{port}/{name}/{id}?ssl={ssl-port}&t={registration-time-utc}&type={service-type}&c={custom}&u={unknown}")
	return map[string]*Instance{
		"typed": {Name: "orders", ID: "id-1", Address: "10.0.0.5", Port: 8080, RegistrationTimeUTC: goldenTime, ServiceType: Dynamic, URISpec: spring,
			Payload: mustPayload(t, details{"primary", 3, map[string]string{"zone": "eu-1"}}, "GenGolden$Details")},
		"nulls":         {Name: "orders", ID: "id-2", RegistrationTimeUTC: goldenTime, ServiceType: Dynamic},
		"string":        {Name: "orders", ID: "id-3", Address: "h", Port: 1, SSLPort: 2, Payload: mustPayload(t, "hello \"w\" é\u2028<>&", ""), RegistrationTimeUTC: goldenTime, ServiceType: Static, URISpec: spring},
		"controls":      {Name: "or\x01ders", ID: "id\t\n\r\b\f\x1f/\\", Address: "h", Port: 65535, Payload: mustPayload(t, "\x7f\x00", ""), RegistrationTimeUTC: goldenTime, ServiceType: Static},
		"number":        {Name: "orders", ID: "id-4", Address: "h", Port: 1, Payload: mustPayload(t, 42, ""), RegistrationTimeUTC: goldenTime, ServiceType: Permanent},
		"double":        {Name: "orders", ID: "id-5", Address: "h", Port: 1, Payload: mustPayload(t, 2.5, ""), RegistrationTimeUTC: goldenTime, ServiceType: DynamicSequential},
		"bool":          {Name: "orders", ID: "id-6", Address: "h", Port: 1, Payload: mustPayload(t, true, ""), RegistrationTimeUTC: goldenTime, ServiceType: Dynamic},
		"map":           {Name: "orders", ID: "id-7", Address: "h", Port: 1, Payload: mustPayload(t, map[string]any{"a": "x", "b": 7}, ""), RegistrationTimeUTC: goldenTime, ServiceType: Dynamic},
		"list":          {Name: "orders", ID: "id-8", Address: "h", Port: 1, Payload: mustPayload(t, []any{"x", 7}, ""), RegistrationTimeUTC: goldenTime, ServiceType: Dynamic},
		"enabled-true":  {Name: "orders", ID: "id-9", Address: "h", Port: 1, RegistrationTimeUTC: goldenTime, ServiceType: Dynamic, URISpec: spring, Enabled: tru()},
		"enabled-false": {Name: "orders", ID: "id-10", Address: "h", Port: 1, RegistrationTimeUTC: goldenTime, ServiceType: Dynamic, URISpec: spring, Enabled: fals()},
		"allvars":       {Name: "orders", ID: "id-11", Address: "10.0.0.5", Port: 8080, SSLPort: 8443, RegistrationTimeUTC: goldenTime, ServiceType: Dynamic, URISpec: all},
	}
}

// TestWriteMatchesCurator: every instance built in Go is written with the
// bytes Curator 5.4 and 5.7.1 write for the same instance.
func TestWriteMatchesCurator(t *testing.T) {
	for name, inst := range goInstances(t) {
		got, err := inst.MarshalJSON()
		require.NoError(t, err)
		for _, dir := range curatorDirs {
			want, err := os.ReadFile(filepath.Join(dir, name+".json"))
			require.NoError(t, err)
			assert.Equal(t, string(want), string(got), "%s/%s", dir, name)
		}
	}
}

// TestRoundTripCurator: each file Curator wrote reads and writes back
// byte for byte.
func TestRoundTripCurator(t *testing.T) {
	files := []string{"testdata/spring-cloud.json"}
	for _, dir := range curatorDirs {
		m, err := filepath.Glob(filepath.Join(dir, "*.json"))
		require.NoError(t, err)
		require.NotEmpty(t, m)
		files = append(files, m...)
	}
	for _, f := range files {
		want, err := os.ReadFile(f)
		require.NoError(t, err)
		inst, err := Decode(want)
		require.NoError(t, err, f)
		got, err := inst.MarshalJSON()
		require.NoError(t, err)
		assert.Equal(t, string(want), string(got), f)
		// json.Marshal escapes HTML characters and U+2028 in what
		// MarshalJSON returns: the same JSON, other bytes.
		viaJSON, err := json.Marshal(inst)
		require.NoError(t, err)
		assert.JSONEq(t, string(want), string(viaJSON), f)
	}
}

func TestReadSpringCloud(t *testing.T) {
	b, err := os.ReadFile("testdata/spring-cloud.json")
	require.NoError(t, err)
	inst, err := Decode(b)
	require.NoError(t, err)
	assert.Equal(t, "cloud-provider-payment", inst.Name)
	assert.Equal(t, "585ddd0b-…", inst.ID)
	assert.Equal(t, "192.168.0.106", inst.Address)
	assert.Equal(t, 8004, inst.Port)
	assert.Zero(t, inst.SSLPort)
	assert.Equal(t, int64(1698197224917), inst.RegistrationTimeUTC)
	assert.Equal(t, Dynamic, inst.ServiceType)
	assert.True(t, inst.IsEnabled())
	assert.Equal(t, "org.springframework.cloud.zookeeper.discovery.ZookeeperInstance", inst.PayloadClass())
	var p struct {
		ID       string            `json:"id"`
		Name     string            `json:"name"`
		Metadata map[string]string `json:"metadata"`
	}
	require.NoError(t, inst.DecodePayload(&p))
	assert.Equal(t, "application-1", p.ID)
	assert.Equal(t, "http://192.168.0.106:8004", inst.BuildURI(nil))
}

func TestReadDubboAndUnknownFields(t *testing.T) {
	b, err := os.ReadFile("testdata/dubbo.json")
	require.NoError(t, err)
	inst, err := Decode(b)
	require.NoError(t, err)
	assert.Equal(t, "demo-provider", inst.Name)
	assert.Equal(t, 20880, inst.Port)
	assert.Nil(t, inst.URISpec)
	assert.True(t, inst.IsEnabled())
	var m map[string]any
	require.NoError(t, inst.DecodePayload(&m))
	assert.NotContains(t, m, "@class")
	assert.Equal(t, "demo-provider", m["name"])
}

func TestReadForms(t *testing.T) {
	// uriSpec as a template string (signalfx/golib's form), no serviceType,
	// no payload, enabled false.
	inst, err := Decode([]byte(`{"name":"s","id":"i","uriSpec":"{scheme}://{address}","enabled":false,"port":null}`))
	require.NoError(t, err)
	assert.Equal(t, "{scheme}://{address}", inst.URISpec.String())
	assert.Equal(t, Dynamic, inst.ServiceType)
	assert.False(t, inst.IsEnabled())
	for _, bad := range []string{`{`, `[]`, `{"port":"x"}`, `{"uriSpec":7}`, `{"uriSpec":"{x"}`, `null x`} {
		_, err := Decode([]byte(bad))
		assert.ErrorIs(t, err, recipes.ErrCorrupt, bad)
	}
}

func TestPayloads(t *testing.T) {
	list, err := Decode([]byte(`{"payload":["java.util.ArrayList",["x",7]]}`))
	require.NoError(t, err)
	assert.Equal(t, JavaList, list.PayloadClass())
	var l []any
	require.NoError(t, list.DecodePayload(&l))
	assert.Equal(t, []any{"x", float64(7)}, l)

	typed, err := EncodePayload(json.RawMessage(`{ "a" : 1 }`), "com.example.A")
	require.NoError(t, err)
	assert.Equal(t, `{"@class":"com.example.A","a":1}`, string(typed))
	again, err := EncodePayload(typed, "other")
	require.NoError(t, err)
	assert.Equal(t, string(typed), string(again), "a payload with its @class keeps it")
	empty, err := EncodePayload(struct{}{}, "E")
	require.NoError(t, err)
	assert.Equal(t, `{"@class":"E"}`, string(empty))
	nul, err := EncodePayload(nil, "E")
	require.NoError(t, err)
	assert.Nil(t, nul)
	_, err = EncodePayload(json.RawMessage(`{`), "")
	assert.ErrorIs(t, err, recipes.ErrInvalidArgument)

	bad := &Instance{ID: "x", Payload: json.RawMessage(`{"a":`)}
	_, err = bad.MarshalJSON()
	assert.ErrorIs(t, err, recipes.ErrInvalidArgument)
	num := &Instance{Payload: json.RawMessage(`"str"`)}
	var n int
	assert.ErrorIs(t, num.DecodePayload(&n), recipes.ErrCorrupt)
}

// TestURISpecMatchesCurator checks ParseURISpec and Build against
// Curator's UriSpec (urispec.txt).
func TestURISpecMatchesCurator(t *testing.T) {
	insts := map[string]*Instance{
		"id-11": {Name: "orders", ID: "id-11", Address: "10.0.0.5", Port: 8080, SSLPort: 8443, RegistrationTimeUTC: goldenTime, ServiceType: Dynamic},
		"id-12": {Name: "orders", ID: "id-12", RegistrationTimeUTC: goldenTime, ServiceType: Static},
	}
	vars := map[string]any{"custom": "cv"}
	for _, dir := range curatorDirs {
		f, err := os.Open(filepath.Join(dir, "urispec.txt"))
		require.NoError(t, err)
		sc := bufio.NewScanner(f)
		var spec *URISpec
		var template string
		checked := 0
		for sc.Scan() {
			k, v, _ := strings.Cut(sc.Text(), "\t")
			switch k {
			case "template":
				template = v
				spec, err = ParseURISpec(v)
			case "error":
				assert.ErrorIs(t, err, recipes.ErrInvalidArgument, "%q: Curator says %s", template, v)
				checked++
			case "parts":
				require.NoError(t, err, template)
				inst := &Instance{Name: "n", ID: "i", ServiceType: Dynamic, URISpec: spec}
				got, err := inst.MarshalJSON()
				require.NoError(t, err)
				assert.Equal(t, v, string(got), template)
				checked++
			case "build":
				id, want, _ := strings.Cut(v, "\t")
				assert.Equal(t, want, spec.Build(insts[id], vars), "%q for %s", template, id)
				checked++
			}
		}
		require.NoError(t, sc.Err())
		f.Close()
		assert.Greater(t, checked, 20)
	}
}

func FuzzDecode(f *testing.F) {
	for _, dir := range curatorDirs {
		m, _ := filepath.Glob(filepath.Join(dir, "*.json"))
		for _, p := range m {
			b, _ := os.ReadFile(p)
			f.Add(b)
		}
	}
	f.Add([]byte(`{"uriSpec":"{a}b","payload":["x",[1]]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		inst, err := Decode(data)
		if err != nil {
			if !errors.Is(err, recipes.ErrCorrupt) {
				t.Fatalf("error not ErrCorrupt: %v", err)
			}
			return
		}
		_ = inst.PayloadClass()
		var v any
		_ = inst.DecodePayload(&v)
		_ = inst.BuildURI(map[string]any{"x": 1})
		b1, err := inst.MarshalJSON()
		if err != nil {
			t.Fatalf("marshal of a decoded instance: %v", err)
		}
		again, err := Decode(b1)
		if err != nil {
			t.Fatalf("re-decode %q: %v", b1, err)
		}
		b2, err := again.MarshalJSON()
		if err != nil || !bytes.Equal(b1, b2) {
			t.Fatalf("not stable: %q then %q (%v)", b1, b2, err)
		}
	})
}
