// Linux flags the Glibc module does not show (they need _GNU_SOURCE or come from
// <linux/*.h>), named once here so no caller writes a bare number. The values are the
// same on every architecture Swift runs on, except O_DIRECT.
import Glibc

public enum OpenFlag {
    public static let path: Int32 = 0o10000000       // O_PATH
    public static let noAccessTime: Int32 = 0o1000000 // O_NOATIME
    #if arch(arm64) || arch(arm)
    public static let direct: Int32 = 0o200000       // O_DIRECT
    #else
    public static let direct: Int32 = 0o40000        // O_DIRECT
    #endif
}

public enum SeekWhence {
    public static let data: Int32 = 3  // SEEK_DATA
    public static let hole: Int32 = 4  // SEEK_HOLE
}

/// fallocate(2) modes.
public enum FallocateMode {
    public static let keepSize: Int32 = 0x01   // FALLOC_FL_KEEP_SIZE
    public static let punchHole: Int32 = 0x02  // FALLOC_FL_PUNCH_HOLE
    public static let zeroRange: Int32 = 0x10  // FALLOC_FL_ZERO_RANGE
}

public enum RenameFlag {
    public static let noReplace: UInt32 = 1 << 0  // RENAME_NOREPLACE
    public static let exchange: UInt32 = 1 << 1   // RENAME_EXCHANGE
}

public enum SyncFileRange {
    public static let write: UInt32 = 2  // SYNC_FILE_RANGE_WRITE: start writeback, do not wait
}

public enum AtFlag {
    public static let emptyPath: Int32 = 0x1000  // AT_EMPTY_PATH
}

/// The largest extended attribute value Linux stores (XATTR_SIZE_MAX).
public let largestAttributeValue = 65536

/// utimensat(2)'s special nanosecond values.
public enum TimeSpecial {
    public static let now = Int((1 << 30) - 1)   // UTIME_NOW
    public static let omit = Int((1 << 30) - 2)  // UTIME_OMIT
}
