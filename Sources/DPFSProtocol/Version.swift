// The version of this dpfs: `dpfs --version`, `status --json`, the Debian package.
public enum DPFSVersion {
    public static let current = "0.11.0"
}
