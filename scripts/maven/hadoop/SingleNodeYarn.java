package io.flinkish.hdfs;

import java.io.File;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.StandardCopyOption;
import java.util.LinkedHashMap;
import java.util.Map;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.yarn.conf.YarnConfiguration;
import org.apache.hadoop.yarn.server.nodemanager.NodeManager;
import org.apache.hadoop.yarn.server.resourcemanager.ResourceManager;

/**
 * A single-node YARN for scripts/start-cluster.sh --yarn: Hadoop's own ResourceManager and
 * NodeManager (the classes MiniYARNCluster wraps, started directly so that every address is
 * the configured one: MiniYARNCluster binds its NodeManager to "localhost" whatever the
 * configuration says), in this JVM, every address on 127.0.0.1, over the HDFS that the script
 * started first (fs.defaultFS).
 *
 * <p>Arguments: the base directory (the NodeManager's local and log directories, the
 * ResourceManager's state), the file system (hdfs://127.0.0.1:PORT), the Hadoop configuration
 * directory to write for clients (core-site.xml, hdfs-site.xml, yarn-site.xml, with the
 * addresses actually bound), the ResourceManager's client port and web port (0: any free one),
 * the NodeManager's memory in MB and vcores, and the largest container in MB.
 *
 * <p>When the NodeManager has registered it prints {@code HADOOP_CONF_DIR=<dir>} and runs
 * until it is stopped (SIGTERM: the NodeManager stops its containers, then the
 * ResourceManager stops).
 */
public final class SingleNodeYarn {
  private static final String HOST = "127.0.0.1";

  private SingleNodeYarn() {}

  public static void main(String[] args) throws Exception {
    if (args.length != 8) {
      System.err.println(
          "usage: SingleNodeYarn BASE_DIR FS CONF_DIR RM_PORT RM_WEB_PORT NM_MEMORY_MB"
              + " NM_VCORES MAX_CONTAINER_MB");
      System.exit(2);
    }
    File base = new File(args[0]).getAbsoluteFile();
    String fs = args[1];
    File confDir = new File(args[2]).getAbsoluteFile();
    int rmPort = Integer.parseInt(args[3]);
    int webPort = freeIfZero(Integer.parseInt(args[4]));
    int memoryMb = Integer.parseInt(args[5]);
    int vcores = Integer.parseInt(args[6]);
    int maxContainerMb = Integer.parseInt(args[7]);

    YarnConfiguration conf = new YarnConfiguration();
    Map<String, String> cluster = new LinkedHashMap<>();
    cluster.put("fs.defaultFS", fs);
    // The ResourceManager: every service on loopback, the host name included.
    cluster.put("yarn.resourcemanager.hostname", HOST);
    cluster.put("yarn.resourcemanager.bind-host", HOST);
    cluster.put("yarn.resourcemanager.address", HOST + ":" + rmPort);
    cluster.put("yarn.resourcemanager.scheduler.address", HOST + ":0");
    cluster.put("yarn.resourcemanager.resource-tracker.address", HOST + ":0");
    cluster.put("yarn.resourcemanager.admin.address", HOST + ":0");
    cluster.put("yarn.resourcemanager.webapp.address", HOST + ":" + webPort);
    cluster.put("yarn.resourcemanager.webapp.https.address", HOST + ":0");
    cluster.put("yarn.resourcemanager.store.class",
        "org.apache.hadoop.yarn.server.resourcemanager.recovery.MemoryRMStateStore");
    // The NodeManager: the same.
    cluster.put("yarn.nodemanager.hostname", HOST);
    cluster.put("yarn.nodemanager.bind-host", HOST);
    cluster.put("yarn.nodemanager.address", HOST + ":0");
    cluster.put("yarn.nodemanager.localizer.address", HOST + ":0");
    cluster.put("yarn.nodemanager.webapp.address", HOST + ":" + freeIfZero(0));
    cluster.put("yarn.nodemanager.webapp.https.address", HOST + ":0");
    cluster.put("yarn.nodemanager.collector-service.address", HOST + ":0");
    cluster.put("yarn.nodemanager.amrmproxy.address", HOST + ":0");
    cluster.put("yarn.nodemanager.local-dirs", new File(base, "local").getPath());
    cluster.put("yarn.nodemanager.log-dirs", new File(base, "logs").getPath());
    // No timeline service, no web proxy of its own (the RM's embedded one), no shuffle.
    cluster.put("yarn.timeline-service.enabled", "false");
    cluster.put("yarn.nodemanager.aux-services", "");
    // Sized for a small machine (docs/guides/yarn.md): the NodeManager offers memoryMb and
    // vcores; no container is larger than maxContainerMb; vcores are not counted by the
    // scheduler (its default resource calculator counts memory only).
    cluster.put("yarn.nodemanager.resource.memory-mb", Integer.toString(memoryMb));
    cluster.put("yarn.nodemanager.resource.cpu-vcores", Integer.toString(vcores));
    cluster.put("yarn.nodemanager.resource.detect-hardware-capabilities", "false");
    cluster.put("yarn.scheduler.minimum-allocation-mb", "128");
    cluster.put("yarn.scheduler.maximum-allocation-mb", Integer.toString(maxContainerMb));
    cluster.put("yarn.scheduler.maximum-allocation-vcores", Integer.toString(vcores));
    // A JVM's virtual memory is many times its heap (thread stacks, mapped archives): the
    // virtual-memory check would kill healthy containers; the physical one stays.
    cluster.put("yarn.nodemanager.vmem-check-enabled", "false");
    // The disk checker marks the node unhealthy (and stops its containers) at 90% use by
    // default: on a developer's disk that is an ordinary state. Unhealthy at 99% or below
    // 512 MB free.
    cluster.put(
        "yarn.nodemanager.disk-health-checker.max-disk-utilization-per-disk-percentage", "99");
    cluster.put("yarn.nodemanager.disk-health-checker.min-free-space-per-disk-mb", "512");
    // The capacity scheduler's one queue, "default", with the whole cluster; application
    // masters (a yarn-application job's driver) may hold most of it (Hadoop's default, 10%,
    // would queue the second job's driver on a small node).
    cluster.put("yarn.scheduler.capacity.root.queues", "default");
    cluster.put("yarn.scheduler.capacity.root.default.capacity", "100");
    cluster.put("yarn.scheduler.capacity.root.default.maximum-capacity", "100");
    cluster.put("yarn.scheduler.capacity.maximum-am-resource-percent", "0.8");
    // Up to 4 attempts per application (spark.yarn.maxAppAttempts asks within that).
    cluster.put("yarn.resourcemanager.am.max-attempts", "4");
    // Logs stay on the NodeManager (read live through its REST API) for a day.
    cluster.put("yarn.log-aggregation-enable", "false");
    cluster.put("yarn.nodemanager.log.retain-seconds", "86400");
    // A finished container's directory is removed at once (no debugging delay).
    cluster.put("yarn.nodemanager.delete.debug-delay-sec", "0");
    // Clients (Spark's YARN client, the AM) over HDFS with one DataNode.
    cluster.put("dfs.replication", "1");
    cluster.put("dfs.client.use.datanode.hostname", "true");
    cluster.put("dfs.client.block.write.replace-datanode-on-failure.policy", "NEVER");
    for (Map.Entry<String, String> entry : cluster.entrySet()) {
      conf.set(entry.getKey(), entry.getValue());
    }
    new File(base, "local").mkdirs();
    new File(base, "logs").mkdirs();

    ResourceManager rm = new ResourceManager();
    rm.init(conf);
    rm.start();
    Configuration bound = rm.getConfig();
    String[] rmKeys = {
      "yarn.resourcemanager.address",
      "yarn.resourcemanager.scheduler.address",
      "yarn.resourcemanager.resource-tracker.address",
      "yarn.resourcemanager.admin.address",
    };
    YarnConfiguration nmConf = new YarnConfiguration(conf);
    for (String key : rmKeys) {
      // Hadoop advertises a bound address by its canonical name ("localhost"): keep the port,
      // advertise 127.0.0.1
      String address = bound.get(key);
      address = HOST + address.substring(address.lastIndexOf(':'));
      cluster.put(key, address);
      nmConf.set(key, address);
    }
    nmConf.set("yarn.resourcemanager.webapp.address", cluster.get(
        "yarn.resourcemanager.webapp.address"));

    NodeManager nm = new NodeManager();
    nm.init(nmConf);
    nm.start();
    Runtime.getRuntime()
        .addShutdownHook(
            new Thread(
                () -> {
                  nm.stop();
                  rm.stop();
                },
                "yarn-shutdown"));
    long deadline = System.currentTimeMillis() + 120_000;
    while (rm.getRMContext().getRMNodes().isEmpty()) {
      if (System.currentTimeMillis() > deadline) {
        System.err.println("the NodeManager did not register with the ResourceManager");
        System.exit(1);
      }
      Thread.sleep(100);
    }
    String nodeId = rm.getRMContext().getRMNodes().keySet().iterator().next().toString();
    String nmWeb = nm.getConfig().get("yarn.nodemanager.webapp.address");

    confDir.mkdirs();
    writeSite(new File(confDir, "core-site.xml"), cluster, "fs.");
    writeSite(new File(confDir, "hdfs-site.xml"), cluster, "dfs.");
    writeSite(new File(confDir, "yarn-site.xml"), cluster, "yarn.");
    System.out.println(
        "ResourceManager: " + cluster.get("yarn.resourcemanager.address") + ", web UI http://"
            + cluster.get("yarn.resourcemanager.webapp.address") + "; NodeManager " + nodeId
            + " (web " + nmWeb + "), " + memoryMb + " MB, " + vcores + " vcores");
    System.out.println("HADOOP_CONF_DIR=" + confDir);
    System.out.flush();
    Thread.currentThread().join();
  }

  /** {@code port}, or a free port of 127.0.0.1 when it is 0 (a web server's port is not read
   * back from Hadoop's configuration once bound). */
  private static int freeIfZero(int port) throws IOException {
    if (port != 0) {
      return port;
    }
    try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getByName(HOST))) {
      return socket.getLocalPort();
    }
  }

  /** The entries whose keys start with {@code prefix}, as a Hadoop site file (atomically). */
  private static void writeSite(File file, Map<String, String> entries, String prefix)
      throws IOException {
    Configuration site = new Configuration(false);
    for (Map.Entry<String, String> entry : entries.entrySet()) {
      if (entry.getKey().startsWith(prefix)) {
        site.set(entry.getKey(), entry.getValue());
      }
    }
    File scratch = new File(file.getPath() + ".tmp");
    try (OutputStream out = new FileOutputStream(scratch)) {
      site.writeXml(out);
    }
    Files.move(scratch.toPath(), file.toPath(), StandardCopyOption.REPLACE_EXISTING,
        StandardCopyOption.ATOMIC_MOVE);
  }
}
