import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.Watcher.Event.KeeperState;
import org.apache.zookeeper.ZooDefs;
import org.apache.zookeeper.ZooKeeper;
import org.apache.zookeeper.data.ACL;
import org.apache.zookeeper.data.Id;

// ZooKeeper's own Java client, authenticated by SASL DIGEST-MD5 from the
// JAAS Client section named by java.security.auth.login.config: reads
// args[1] (made by the Go test with the ACL sasl:bob), creates args[2]
// with the same ACL (in a mutable list: validateACL asks contains(null),
// which List.of refuses), and prints what happened.
public class SaslJava {
    public static void main(String[] args) throws Exception {
        CountDownLatch authed = new CountDownLatch(1);
        ZooKeeper zk = new ZooKeeper(args[0], 4000, e -> {
            if (e.getState() == KeeperState.SaslAuthenticated) {
                authed.countDown();
            } else if (e.getState() == KeeperState.AuthFailed) {
                System.out.println("AUTHFAILED");
                System.exit(3);
            }
        });
        if (!authed.await(30, TimeUnit.SECONDS)) {
            System.out.println("NOT AUTHENTICATED");
            System.exit(2);
        }
        System.out.println("READ " + new String(zk.getData(args[1], false, null), "UTF-8"));
        zk.create(args[2], "java's".getBytes("UTF-8"),
            new ArrayList<>(List.of(new ACL(ZooDefs.Perms.ALL, new Id("sasl", "bob")))), CreateMode.PERSISTENT);
        System.out.println("CREATED " + args[2]);
        zk.close();
    }
}
