// Extended attribute names the mount answers; shared by the filesystem and the CLI.

public enum MountAttributes {
    /// A node's protection class (a directory's: the class new children take).
    public static let protection = "user.dpfs.protection"
    /// Asked of the mount root: the path of the daemon's control socket.
    public static let controlSocket = "user.dpfs.control"
    /// Set on a directory: the class the calling thread's next file created there takes
    /// (a class given at creation); removing it takes that back.
    public static let createProtection = "user.dpfs.create-protection"
}
