// Example: where Foundation puts an app's files. Under `dpfs run` every line names a
// directory of the mount, as on iOS:
//
//   documents=MNT/Documents  caches=MNT/Library/Caches
//   applicationSupport=MNT/Library/Application Support  temporary=MNT/tmp/  home=MNT
import Foundation

let manager = FileManager.default
func first(_ directory: FileManager.SearchPathDirectory) -> String {
    manager.urls(for: directory, in: .userDomainMask).first?.path ?? "(none)"
}

print("documents=\(first(.documentDirectory))")
print("caches=\(first(.cachesDirectory))")
print("applicationSupport=\(first(.applicationSupportDirectory))")
print("temporary=\(NSTemporaryDirectory())")
print("home=\(NSHomeDirectory())")
