// The flag combinations Apple's SecAccessControlCreateWithFlags refuses with
// errSecParam: one biometry constraint at most, and .userPresence beside nothing but
// .privateKeyUsage and .applicationPassword. `problem` is the one place that says so.
import DPFSProtocol
import Testing

@Suite struct AccessControlCombinationTests {
    @Test(arguments: [
        AccessControlFlags([.biometryAny, .biometryCurrentSet]),
        [.biometryAny, .biometryCurrentSet, .or],
        [.userPresence, .devicePasscode],
        [.userPresence, .biometryAny, .or],
        [.userPresence, .biometryCurrentSet, .privateKeyUsage],
        [.userPresence, .or],
        [.userPresence, .and],
    ])
    func appleRefuses(_ flags: AccessControlFlags) {
        #expect(flags.problem != nil)
    }

    @Test(arguments: [
        AccessControlFlags([.userPresence]),
        [.userPresence, .privateKeyUsage],
        [.biometryCurrentSet, .or, .devicePasscode],
        [.biometryAny, .and, .devicePasscode, .privateKeyUsage],
        [.devicePasscode],
    ])
    func appleAccepts(_ flags: AccessControlFlags) {
        #expect(flags.problem == nil)
    }
}
