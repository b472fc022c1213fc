// CuratorDiscovery is one service process of Apache Curator's service
// discovery (curator-x-discovery) for zkrecipes' interop tests: a
// single-file source program run as
//
//	java -cp <curator + curator-x-discovery + jackson + zookeeper jars> \
//	    CuratorDiscovery.java <connectString> <basePath> <name> <id> <port> \
//	    <description> <sessionMillis>
//
// It registers one instance of service <name> (DYNAMIC, address
// 127.0.0.1, the typed payload CuratorDiscovery$Details with <description>)
// through a ServiceDiscovery typed on Details (JsonInstanceSerializer of
// Details: an instance whose payload lacks that class fails its queries),
// starts a ServiceCache of <name>, prints READY and then answers commands
// on stdin, one per line:
//
//   QUERY  prints "QUERY <ids>" (queryForInstances, ids sorted and
//          comma-separated) then "PAYLOAD <id> <class> <description>" for
//          each; "QUERYERROR <message>" when the query throws
//   CACHE  prints "CACHE <ids>" from the ServiceCache
//   TYPES  prints "TYPES <id>:<serviceType>,..." (queryForInstances, by id)
//   REGISTER <id> <type>  registers one more instance <id> of <name> with
//          ServiceType <type> (STATIC, PERMANENT, ...), prints REGISTERED <id>
//   REGISTEROTHER <id>  registers instance <id> of <name> with a payload of
//          another class, CuratorDiscovery$Other (note "java <id>"), through
//          a second ServiceDiscovery typed on Other; prints REGISTERED <id>
//   GETOTHER <id>  prints "OTHER <id> <class> <note>" (queryForInstance on
//          the discovery typed on Other), "OTHER <id> none" when there is
//          none, "QUERYERROR <message>" when it throws
//   QUIT   closes the cache, the discovery (unregistering) and the client,
//          prints BYE and exits 0
//
// Any exception elsewhere prints "ERROR: ..." on stderr and exits 1.
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.retry.RetryNTimes;
import org.apache.curator.x.discovery.ServiceCache;
import org.apache.curator.x.discovery.ServiceDiscovery;
import org.apache.curator.x.discovery.ServiceDiscoveryBuilder;
import org.apache.curator.x.discovery.ServiceInstance;
import org.apache.curator.x.discovery.ServiceType;
import org.apache.curator.x.discovery.UriSpec;
import org.apache.curator.x.discovery.details.JsonInstanceSerializer;

public class CuratorDiscovery {
    /** The typed payload, as a Java service declares one. */
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

    /** Another payload class, which a reader typed on Details refuses. */
    public static class Other {
        private String note;

        public Other() {}

        public Other(String note) { this.note = note; }

        public String getNote() { return note; }
        public void setNote(String n) { note = n; }
    }

    static String ids(Collection<ServiceInstance<Details>> insts) {
        List<String> ids = new ArrayList<>();
        for (ServiceInstance<Details> i : insts) {
            ids.add(i.getId());
        }
        Collections.sort(ids);
        return String.join(",", ids);
    }

    public static void main(String[] args) throws Exception {
        // Run from source, this program's classes live in the launcher's
        // in-memory class loader, which Jackson only finds through the
        // context class loader (threads made later inherit it).
        Thread.currentThread().setContextClassLoader(CuratorDiscovery.class.getClassLoader());
        try {
            run(args);
        } catch (Throwable e) {
            System.err.println("ERROR: " + e);
            e.printStackTrace();
            System.exit(1);
        }
    }

    static void run(String[] args) throws Exception {
        String connect = args[0], base = args[1], name = args[2], id = args[3];
        int port = Integer.parseInt(args[4]);
        String description = args[5];
        int session = Integer.parseInt(args[6]);
        CuratorFramework client = CuratorFrameworkFactory.builder().connectString(connect)
            .sessionTimeoutMs(session).connectionTimeoutMs(session)
            .retryPolicy(new RetryNTimes(Integer.MAX_VALUE, 200)).build();
        client.start();
        Details d = new Details(description, 1);
        d.getMeta().put("lang", "java");
        ServiceInstance<Details> inst = ServiceInstance.<Details>builder().name(name).id(id)
            .address("127.0.0.1").port(port).payload(d).serviceType(ServiceType.DYNAMIC)
            .uriSpec(new UriSpec("{scheme}://{address}:{port}")).build();
        ServiceDiscovery<Details> sd = ServiceDiscoveryBuilder.builder(Details.class).client(client)
            .basePath(base).serializer(new JsonInstanceSerializer<>(Details.class)).thisInstance(inst).build();
        sd.start();
        ServiceDiscovery<Other> other = ServiceDiscoveryBuilder.builder(Other.class).client(client)
            .basePath(base).serializer(new JsonInstanceSerializer<>(Other.class)).build();
        other.start();
        ServiceCache<Details> cache = sd.serviceCacheBuilder().name(name).build();
        cache.start();
        System.out.println("READY");
        System.out.flush();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            String[] f = line.trim().split(" ");
            if (f[0].equals("REGISTER") && f.length == 3) {
                Details rd = new Details(description + " " + f[1], 1);
                rd.getMeta().put("lang", "java");
                sd.registerService(ServiceInstance.<Details>builder().name(name).id(f[1])
                    .address("127.0.0.1").port(port).payload(rd).serviceType(ServiceType.valueOf(f[2]))
                    .uriSpec(new UriSpec("{scheme}://{address}:{port}")).build());
                System.out.println("REGISTERED " + f[1]);
                System.out.flush();
                continue;
            }
            if (f[0].equals("REGISTEROTHER") && f.length == 2) {
                other.registerService(ServiceInstance.<Other>builder().name(name).id(f[1])
                    .address("127.0.0.1").port(port).payload(new Other("java " + f[1])).build());
                System.out.println("REGISTERED " + f[1]);
                System.out.flush();
                continue;
            }
            if (f[0].equals("GETOTHER") && f.length == 2) {
                try {
                    ServiceInstance<Other> i = other.queryForInstance(name, f[1]);
                    Other p = i == null ? null : i.getPayload();
                    System.out.println("OTHER " + f[1] + (i == null ? " none"
                        : " " + (p == null ? "null" : p.getClass().getName() + " " + p.getNote())));
                } catch (Exception e) {
                    System.out.println("QUERYERROR " + e.toString().replace('\n', ' '));
                }
                System.out.flush();
                continue;
            }
            switch (line.trim()) {
            case "TYPES":
                try {
                    List<String> ts = new ArrayList<>();
                    for (ServiceInstance<Details> i : sd.queryForInstances(name)) {
                        ts.add(i.getId() + ":" + i.getServiceType());
                    }
                    Collections.sort(ts);
                    System.out.println("TYPES " + String.join(",", ts));
                } catch (Exception e) {
                    System.out.println("QUERYERROR " + e.toString().replace('\n', ' '));
                }
                break;
            case "QUERY":
                try {
                    Collection<ServiceInstance<Details>> all = sd.queryForInstances(name);
                    StringBuilder sb = new StringBuilder("QUERY ").append(ids(all)).append('\n');
                    for (ServiceInstance<Details> i : all) {
                        Details p = i.getPayload();
                        sb.append("PAYLOAD ").append(i.getId()).append(' ')
                            .append(p == null ? "null" : p.getClass().getName()).append(' ')
                            .append(p == null ? "" : p.getDescription()).append('\n');
                    }
                    System.out.print(sb);
                } catch (Exception e) {
                    System.out.println("QUERYERROR " + e.toString().replace('\n', ' '));
                }
                break;
            case "CACHE":
                System.out.println("CACHE " + ids(cache.getInstances()));
                break;
            case "QUIT":
                cache.close();
                other.close();
                sd.close();
                client.close();
                System.out.println("BYE");
                System.out.flush();
                System.exit(0);
                break;
            default:
                System.err.println("unknown command " + line);
            }
            System.out.flush();
        }
    }
}
