package io.flinkish.hdfs;

import java.io.File;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hdfs.HdfsConfiguration;
import org.apache.hadoop.hdfs.MiniDFSCluster;

/**
 * A single-node HDFS for scripts/start-cluster.sh --hdfs: Hadoop's MiniDFSCluster, one NameNode
 * and one DataNode in this JVM, every address on 127.0.0.1 (Hadoop's defaults would bind the
 * wildcard and advertise the machine's host name).
 *
 * <p>Arguments: the base directory (the NameNode's metadata under name-0-1 and name-0-2, the
 * DataNode's blocks under data), the NameNode's RPC port and its HTTP port (0: any free one).
 * The file system is formatted only when the base directory holds no NameNode metadata yet: a
 * start on the directory of an earlier run keeps its files (a restart). When the NameNode and
 * the DataNode are up it prints {@code fs.defaultFS: hdfs://127.0.0.1:PORT} and runs until it
 * is stopped (SIGTERM: Hadoop's own shutdown, which leaves the files on disk).
 */
public final class SingleNodeHdfs {
  private SingleNodeHdfs() {}

  public static void main(String[] args) throws Exception {
    if (args.length != 3) {
      System.err.println("usage: SingleNodeHdfs BASE_DIR NAMENODE_PORT NAMENODE_HTTP_PORT");
      System.exit(2);
    }
    File base = new File(args[0]).getAbsoluteFile();
    int rpcPort = Integer.parseInt(args[1]);
    int httpPort = Integer.parseInt(args[2]);
    Configuration conf = new HdfsConfiguration();
    conf.set(MiniDFSCluster.HDFS_MINIDFS_BASEDIR, base.getPath());
    conf.set("fs.defaultFS", "hdfs://127.0.0.1:" + rpcPort);
    conf.set("dfs.namenode.rpc-address", "127.0.0.1:" + rpcPort);
    conf.set("dfs.namenode.http-address", "127.0.0.1:" + httpPort);
    conf.set("dfs.namenode.https-address", "127.0.0.1:0");
    conf.set("dfs.namenode.secondary.http-address", "127.0.0.1:0");
    conf.set("dfs.namenode.secondary.https-address", "127.0.0.1:0");
    conf.set("dfs.namenode.backup.address", "127.0.0.1:0");
    conf.set("dfs.namenode.backup.http-address", "127.0.0.1:0");
    conf.set("dfs.datanode.address", "127.0.0.1:0");
    conf.set("dfs.datanode.http.address", "127.0.0.1:0");
    conf.set("dfs.datanode.https.address", "127.0.0.1:0");
    conf.set("dfs.datanode.ipc.address", "127.0.0.1:0");
    conf.set("dfs.datanode.hostname", "127.0.0.1");
    conf.setBoolean("dfs.client.use.datanode.hostname", true);
    conf.setBoolean("dfs.datanode.use.datanode.hostname", true);
    // One DataNode: a block has one replica, and a pipeline cannot replace a failed node.
    conf.setInt("dfs.replication", 1);
    conf.set("dfs.client.block.write.replace-datanode-on-failure.policy", "NEVER");
    boolean format = !new File(base, "name-0-1/current/VERSION").isFile();
    MiniDFSCluster cluster =
        new MiniDFSCluster.Builder(conf, base)
            .nameNodePort(rpcPort)
            .nameNodeHttpPort(httpPort)
            .numDataNodes(1)
            .format(format)
            .checkDataNodeAddrConfig(true)
            .build();
    Runtime.getRuntime().addShutdownHook(new Thread(cluster::shutdown, "hdfs-shutdown"));
    cluster.waitActive();
    cluster.waitClusterUp();
    System.out.println(
        "NameNode web UI: http://127.0.0.1:" + cluster.getNameNode().getHttpAddress().getPort());
    System.out.println(
        (format ? "formatted " : "kept the files of ") + base + "; fs.defaultFS below");
    System.out.println("fs.defaultFS: hdfs://127.0.0.1:" + cluster.getNameNodePort());
    System.out.flush();
    Thread.currentThread().join();
  }
}
