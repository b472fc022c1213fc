// GenGolden writes the golden files of package discovery's JSON tests with
// real Curator (curator-x-discovery's JsonInstanceSerializer and UriSpec).
// It is a single-file Java program (Java 11+):
//
//	java -cp <curator-x-discovery + jackson + curator + zookeeper jars> \
//	    GenGolden.java <outDir>
//
// discovery/golden_gen_test.go runs it (go test ./discovery -run
// TestGenerateGolden -generate) once with Debian 12's Curator 5.4 into
// testdata/curator-5.4 and once with Debian unstable's 5.7.1 into
// testdata/curator-5.7.1; the files are committed.
//
// Every instance is built with ServiceInstance's constructor (fixed id and
// registration time) so the bytes are reproducible.
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.curator.x.discovery.ServiceInstance;
import org.apache.curator.x.discovery.ServiceType;
import org.apache.curator.x.discovery.UriSpec;
import org.apache.curator.x.discovery.details.JsonInstanceSerializer;

public class GenGolden {
    /** A typed payload, as a Java service declares one. */
    public static class Details {
        private String description;
        private int weight;
        private Map<String, String> meta = new LinkedHashMap<>();

        public Details() {}

        public Details(String description, int weight) {
            this.description = description;
            this.weight = weight;
        }

        public String getDescription() { return description; }
        public void setDescription(String d) { description = d; }
        public int getWeight() { return weight; }
        public void setWeight(int w) { weight = w; }
        public Map<String, String> getMeta() { return meta; }
        public void setMeta(Map<String, String> m) { meta = m; }
    }

    static final long T = 1698197224917L;
    static Path out;

    static <T> void write(String name, ServiceInstance<T> inst, Class<T> cls, boolean compatible) throws Exception {
        JsonInstanceSerializer<T> s = new JsonInstanceSerializer<>(cls, compatible);
        Files.write(out.resolve(name + ".json"), s.serialize(inst));
    }

    static final String ALL = "{scheme}://{address}:{port}/{name}/{id}?ssl={ssl-port}&t={registration-time-utc}&type={service-type}&c={custom}&u={unknown}";

    public static void main(String[] args) throws Exception {
        out = Paths.get(args[0]);
        Files.createDirectories(out);
        UriSpec spring = new UriSpec("{scheme}://{address}:{port}");
        Details d = new Details("primary", 3);
        d.getMeta().put("zone", "eu-1");
        write("typed", new ServiceInstance<>("orders", "id-1", "10.0.0.5", 8080, null, d, T, ServiceType.DYNAMIC, spring), Details.class, true);
        write("nulls", new ServiceInstance<Object>("orders", "id-2", null, null, null, null, T, ServiceType.DYNAMIC, null), Object.class, true);
        write("string", new ServiceInstance<Object>("orders", "id-3", "h", 1, 2, "hello \"w\" é\u2028<>&", T, ServiceType.STATIC, spring), Object.class, true);
        write("controls", new ServiceInstance<Object>("or\u0001ders", "id\t\n\r\b\f\u001f/\\", "h", 65535, null, "\u007f\u0000", T, ServiceType.STATIC, null), Object.class, true);
        write("number", new ServiceInstance<Object>("orders", "id-4", "h", 1, null, 42, T, ServiceType.PERMANENT, null), Object.class, true);
        write("double", new ServiceInstance<Object>("orders", "id-5", "h", 1, null, 2.5, T, ServiceType.DYNAMIC_SEQUENTIAL, null), Object.class, true);
        write("bool", new ServiceInstance<Object>("orders", "id-6", "h", 1, null, true, T, ServiceType.DYNAMIC, null), Object.class, true);
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("a", "x");
        m.put("b", 7);
        write("map", new ServiceInstance<Object>("orders", "id-7", "h", 1, null, m, T, ServiceType.DYNAMIC, null), Object.class, true);
        List<Object> l = new ArrayList<>();
        l.add("x");
        l.add(7);
        write("list", new ServiceInstance<Object>("orders", "id-8", "h", 1, null, l, T, ServiceType.DYNAMIC, null), Object.class, true);
        // Scalars of no natural JSON type: Jackson's typed form [class, value].
        write("long", new ServiceInstance<Object>("orders", "id-13", "h", 1, null, 5L, T, ServiceType.DYNAMIC, null), Object.class, true);
        write("enum", new ServiceInstance<Object>("orders", "id-14", "h", 1, null, java.util.concurrent.TimeUnit.SECONDS, T, ServiceType.DYNAMIC, null), Object.class, true);
        write("enabled-true", new ServiceInstance<Object>("orders", "id-9", "h", 1, null, null, T, ServiceType.DYNAMIC, spring, true), Object.class, false);
        write("enabled-false", new ServiceInstance<Object>("orders", "id-10", "h", 1, null, null, T, ServiceType.DYNAMIC, spring, false), Object.class, false);
        write("allvars", new ServiceInstance<Object>("orders", "id-11", "10.0.0.5", 8080, 8443, null, T, ServiceType.DYNAMIC, new UriSpec(ALL)), Object.class, true);

        // UriSpec expansion.
        StringBuilder sb = new StringBuilder();
        Map<String, Object> vars = new LinkedHashMap<>();
        vars.put("custom", "cv");
        String[] templates = {ALL, "{scheme}://{address}:{port}", "plain", "{a}{b}", "x{unclosed", "x}y{z}", "{}", "{{name}}", "{ name }"};
        ServiceInstance<Object>[] insts = new ServiceInstance[] {
            new ServiceInstance<Object>("orders", "id-11", "10.0.0.5", 8080, 8443, null, T, ServiceType.DYNAMIC, null),
            new ServiceInstance<Object>("orders", "id-12", null, null, null, null, T, ServiceType.STATIC, null),
        };
        for (String t : templates) {
            sb.append("template\t").append(t).append('\n');
            UriSpec u;
            try {
                u = new UriSpec(t);
            } catch (RuntimeException e) {
                sb.append("error\t").append(e.getMessage()).append('\n');
                continue;
            }
            sb.append("parts\t").append(new String(new JsonInstanceSerializer<>(Object.class).serialize(
                new ServiceInstance<Object>("n", "i", null, null, null, null, 0, ServiceType.DYNAMIC, u)), StandardCharsets.UTF_8)).append('\n');
            for (ServiceInstance<Object> si : insts) {
                sb.append("build\t").append(si.getId()).append('\t').append(u.build(si, vars)).append('\n');
            }
        }
        Files.write(out.resolve("urispec.txt"), sb.toString().getBytes(StandardCharsets.UTF_8));
        System.out.println("OK");
    }
}
