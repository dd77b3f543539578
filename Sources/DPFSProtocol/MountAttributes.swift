// Extended attribute names the mount answers; shared by the filesystem and the CLI.

public enum MountAttributes {
    /// A node's protection class (a directory's: the class new children take).
    public static let protection = "user.dpfs.protection"
    /// Asked of the mount root: the path of the daemon's control socket.
    public static let controlSocket = "user.dpfs.control"
}
