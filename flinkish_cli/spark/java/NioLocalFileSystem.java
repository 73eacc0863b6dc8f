/*
 * flinkish's local file system for Hadoop (flinkish_cli/spark/local_fs.py builds and uses it).
 *
 * Hadoop's RawLocalFileSystem sets a file's permissions by starting a chmod process when its
 * native library is not loaded, and pip's pyspark ships none: every file a streaming query
 * writes on local disk (offsets, commits, state files, their checksums, the sink's files)
 * costs the JVM one process start. This file system is Hadoop's own in every other respect;
 * it sets permissions through java.nio (the same chmod, in the JVM), and falls back to
 * Hadoop's way for what java.nio cannot express (the sticky bit).
 */
package io.flinkish.hadoop;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.attribute.PosixFilePermissions;
import org.apache.hadoop.fs.LocalFileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.RawLocalFileSystem;
import org.apache.hadoop.fs.permission.FsPermission;

public class NioLocalFileSystem extends LocalFileSystem {
  public NioLocalFileSystem() {
    super(new Raw());
  }

  /** The raw (checksum-less) local file system underneath, with java.nio permissions. */
  public static class Raw extends RawLocalFileSystem {
    @Override
    public void setPermission(Path p, FsPermission permission) throws IOException {
      if (permission.getStickyBit()) {
        super.setPermission(p, permission);
        return;
      }
      Files.setPosixFilePermissions(
          pathToFile(p).toPath(), PosixFilePermissions.fromString(permission.toString()));
    }
  }
}
