// Items behind a SecAccessControl against the device's simulated user: what a read
// answers for each of the user's answers, lockout, re-enrollment, contexts, and that
// the flags are sealed with the item.
import DPFSProtocol
import DataProtection
import Foundation
import Synchronization
import Testing
@testable import ItemStore

@Suite struct AccessControlTests {
    static let currentSet = String(AccessControlFlags.biometryCurrentSet.rawValue)

    func device(enrolled: Bool = true) throws -> TestDevice {
        let t = try TestDevice()
        if enrolled { try t.store.user.enroll(type: .faceID) }
        return t
    }

    func find(_ t: TestDevice, _ service: String, _ interaction: KeychainAuthentication.Interaction = .allow,
              context: String? = nil, limit: String? = nil) -> KeychainResponse {
        var request = KeychainRequest(operation: .find, attributes: ["service": service], limit: limit, returning: "data")
        request.authentication = KeychainAuthentication(interaction: interaction, context: context)
        return t.store.perform(request)
    }

    func answer(_ t: TestDevice, _ answer: BiometryAnswer, times: Int = 1) throws {
        try t.store.user.respond(answer, times: times, passcode: nil)
    }

    @Test func addAsksNothingAndAttributesNeedNoPrompt() throws {
        let t = try device()
        #expect(t.add(["service": "bank", "accessControl": Self.currentSet]).status == 0)
        let attributes = t.find(["service": "bank"], returning: "attributes")
        #expect(attributes.status == 0)
        #expect(attributes.items.first?.attributes?["accessControl"] == Self.currentSet)
        #expect(find(t, "bank", .fail).status == SecStatus.interactionNotAllowed)
        #expect(t.store.user.state().queued == 0)
    }

    @Test func aDataFindReadsTheAccessControlTheRecordHolds() throws {
        // A find of data opens only an item's access control (ItemRecord.gate), not the
        // whole record: both must read the same from every item.
        let t = try device()
        let presence = String(AccessControlFlags.userPresence.rawValue)
        for (service, flags) in [("plain", nil), ("presence", presence), ("bound", Self.currentSet)] as [(String, String?)] {
            #expect(t.add(["service": service].merging(flags.map { ["accessControl": $0] } ?? [:]) { $1 }).status == 0)
        }
        let query = try ItemQuery(ParsedAttributes([:]), scope: AccessScope(try t.store.entitlements(of: nil)),
                                  passcodeSet: true, keys: t.store.keys)
        let items = try t.store.selecting { try query.fetch($0, withSecret: false, limitOne: false, keys: t.store.keys) }
        #expect(items.count == 3)
        for item in items {
            let gate = try ItemRecord.gate(opening: item, keys: t.store.keys)
            #expect(gate.accessControl == (try ItemRecord(opening: item, keys: t.store.keys)).accessControl)
            #expect(!gate.isEnclaveKey)
        }
        let gates = try items.map { try ItemRecord.gate(opening: $0, keys: t.store.keys) }
        #expect(gates.compactMap(\.accessControl?.flags.rawValue).sorted()
                == [AccessControlFlags.userPresence.rawValue, AccessControlFlags.biometryCurrentSet.rawValue].sorted())
        #expect(gates.compactMap(\.accessControl?.boundDomain).count == 1)
    }

    @Test func aFindOfDataWithAttributesAsksToo() throws {
        let t = try device()
        #expect(t.add(["service": "bank", "accessControl": Self.currentSet], data: "token").status == 0)
        var request = KeychainRequest(operation: .find, attributes: ["service": "bank"], returning: "both")
        request.authentication = KeychainAuthentication(interaction: .fail)
        #expect(t.store.perform(request).status == SecStatus.interactionNotAllowed)
        try answer(t, .match)
        request.authentication = KeychainAuthentication(interaction: .allow)
        let found = t.store.perform(request)
        #expect(found.status == 0)
        #expect(found.items.first?.data == Data("token".utf8))
        #expect(found.items.first?.attributes?["accessControl"] == Self.currentSet)
        #expect(t.store.user.state().queued == 0)
    }

    @Test func eachAnswerGetsItsStatus() throws {
        let t = try device()
        #expect(t.add(["service": "bank", "accessControl": Self.currentSet], data: "token").status == 0)
        try answer(t, .match)
        let found = find(t, "bank")
        #expect(found.status == 0)
        #expect(found.items.first?.data == Data("token".utf8))
        try answer(t, .nomatch)
        #expect(find(t, "bank").status == SecStatus.authFailed)
        #expect(t.store.user.state().failedMatches == 1)
        try answer(t, .cancel)
        #expect(find(t, "bank").status == SecStatus.userCanceled)
    }

    @Test func fiveFailedMatchesLockOutUntilThePasscode() throws {
        let t = try device()
        #expect(t.add(["service": "face", "accessControl": Self.currentSet]).status == 0)
        #expect(t.add(["service": "either", "accessControl": String(AccessControlFlags.userPresence.rawValue)],
                      data: "either").status == 0)
        try answer(t, .nomatch, times: 5)
        for _ in 0..<5 { #expect(find(t, "face").status == SecStatus.authFailed) }
        #expect(t.store.user.state().lockedOut)
        try answer(t, .match)
        #expect(find(t, "face").status == SecStatus.authFailed)
        #expect(t.store.user.state().queued == 1, "a locked-out prompt takes no answer")
        #expect(find(t, "either").status == SecStatus.authFailed, "the queued match cannot answer a passcode prompt")
        try t.store.user.respond(.passcode, times: 1, passcode: TestDevice.secret(TestDevice.passcode))
        #expect(find(t, "either").status == 0)
        #expect(!t.store.user.state().lockedOut)
    }

    @Test func anUnlockEndsALockout() throws {
        let t = try device()
        try answer(t, .nomatch, times: 5)
        #expect(t.add(["service": "face", "accessControl": Self.currentSet]).status == 0)
        for _ in 0..<5 { _ = find(t, "face") }
        #expect(t.store.user.state().lockedOut)
        t.lock()
        try t.unlock()
        #expect(!t.store.user.state().lockedOut)
    }

    @Test func reenrollmentInvalidatesOnlyCurrentSetItems() throws {
        let t = try device()
        #expect(t.add(["service": "current", "accessControl": Self.currentSet]).status == 0)
        #expect(t.add(["service": "any", "accessControl": String(AccessControlFlags.biometryAny.rawValue)]).status == 0)
        let before = t.store.user.domainState
        try t.store.user.reenroll(type: nil)
        #expect(t.store.user.domainState != before)
        try answer(t, .match)
        #expect(find(t, "current").status == SecStatus.itemNotFound)
        #expect(t.store.user.state().queued == 1, "an invalid item asks nothing")
        #expect(find(t, "any").status == 0)
        #expect(t.delete(["service": "current"]).status == 0)
    }

    @Test func currentSetNeedsAnEnrollment() throws {
        let t = try device(enrolled: false)
        #expect(t.add(["service": "bank", "accessControl": Self.currentSet]).status == SecStatus.authFailed)
        #expect(t.add(["service": "bank", "accessControl": String(AccessControlFlags.biometryAny.rawValue)]).status == 0)
        try answer(t, .match)
        #expect(find(t, "bank").status == SecStatus.authFailed, "nothing enrolled: no match is possible")
    }

    @Test func skipLeavesProtectedItemsOut() throws {
        let t = try device()
        #expect(t.add(["service": "s", "account": "plain"], data: "plain").status == 0)
        #expect(t.add(["service": "s", "account": "face", "accessControl": Self.currentSet]).status == 0)
        let all = find(t, "s", .skip, limit: "all")
        #expect(all.status == 0)
        #expect(all.items.map(\.data) == [Data("plain".utf8)])
        #expect(find(t, "s", .fail, limit: "all").status == SecStatus.interactionNotAllowed)
    }

    @Test func skipLeavesOutWhatNoPromptCouldOpenToo() throws {
        // Locked out or with nothing enrolled, a protected item could not be opened even
        // by asking: skip leaves it out as it does one that needs a prompt.
        let t = try device()
        let any = String(AccessControlFlags.biometryAny.rawValue)
        #expect(t.add(["service": "s", "account": "face", "accessControl": any], data: "face").status == 0)
        #expect(t.add(["service": "s", "account": "plain"], data: "plain").status == 0)
        #expect(t.add(["service": "guarded", "accessControl": any], data: "guarded").status == 0)
        func expectOnlyThePlainItem(_ why: String) {
            let all = find(t, "s", .skip, limit: "all")
            #expect(all.status == 0, "\(why): limit all")
            #expect(all.items.map(\.data) == [Data("plain".utf8)], "\(why): limit all")
            let one = find(t, "s", .skip)
            #expect(one.status == 0, "\(why): the first match is left out, the next returned")
            #expect(one.items.map(\.data) == [Data("plain".utf8)], "\(why): limit one")
            #expect(find(t, "guarded", .skip).status == SecStatus.itemNotFound, "\(why): only a protected match")
            #expect(find(t, "guarded", .skip, limit: "all").status == SecStatus.itemNotFound, "\(why): only a protected match")
        }
        expectOnlyThePlainItem("enrolled")
        try answer(t, .nomatch, times: 5)
        for _ in 0..<5 { #expect(find(t, "guarded").status == SecStatus.authFailed) }
        #expect(t.store.user.state().lockedOut)
        expectOnlyThePlainItem("locked out")
        try t.store.user.unenroll()
        expectOnlyThePlainItem("nothing enrolled")
        #expect(t.store.user.state().queued == 0)
    }

    @Test func anEvaluatedContextSparesThePrompt() throws {
        let t = try device()
        #expect(t.add(["service": "bank", "accessControl": Self.currentSet]).status == 0)
        let token = String(repeating: "ab", count: 16)
        try answer(t, .match)
        #expect(t.store.user.evaluate(.biometrics, context: token, reuse: 0, interactive: true) == .granted)
        #expect(find(t, "bank", .fail, context: token).status == 0)
        #expect(find(t, "bank", .fail, context: String(repeating: "cd", count: 16)).status == SecStatus.interactionNotAllowed)
        #expect(find(t, "bank", .fail, context: "ab").status == SecStatus.interactionNotAllowed, "a short token is ignored")
        t.store.user.invalidate(context: token)
        #expect(find(t, "bank", .fail, context: token).status == SecStatus.interactionNotAllowed)
    }

    @Test func aContextsMatchEndsWithItsEnrollment() throws {
        let t = try device()
        let any = String(AccessControlFlags.biometryAny.rawValue)
        #expect(t.add(["service": "bank", "accessControl": Self.currentSet]).status == 0)
        #expect(t.add(["service": "any", "accessControl": any]).status == 0)
        #expect(t.add(["service": "pin", "accessControl": String(AccessControlFlags.devicePasscode.rawValue)]).status == 0)
        let token = String(repeating: "ef", count: 16)
        try t.store.user.respond(.passcode, times: 1, passcode: TestDevice.secret(TestDevice.passcode))
        #expect(t.store.user.evaluate(.deviceOwner, context: token, reuse: 0, interactive: true) == .granted)
        try answer(t, .match)
        #expect(t.store.user.evaluate(.biometrics, context: token, reuse: 0, interactive: true) == .granted)
        #expect(find(t, "bank", .fail, context: token).status == 0)

        try t.store.user.reenroll(type: nil)
        #expect(find(t, "bank", .fail, context: token).status == SecStatus.itemNotFound,
                "a match of the old enrollment opens nothing bound to it")
        #expect(find(t, "any", .fail, context: token).status == SecStatus.interactionNotAllowed,
                "nor a .biometryAny item: the match was of a face no longer enrolled")
        #expect(t.add(["service": "new", "accessControl": Self.currentSet]).status == 0)
        #expect(find(t, "new", .fail, context: token).status == SecStatus.interactionNotAllowed)
        #expect(find(t, "pin", .fail, context: token).status == 0, "the context's passcode still counts")
        try answer(t, .match)
        #expect(find(t, "new", context: token).status == 0, "a match of the new enrollment does")
        #expect(find(t, "any", .fail, context: token).status == 0)
    }

    @Test func aContextsMatchEndsWhenNothingIsEnrolled() throws {
        let t = try device()
        #expect(t.add(["service": "bank", "accessControl": Self.currentSet]).status == 0)
        let token = String(repeating: "fe", count: 16)
        try answer(t, .match)
        #expect(t.store.user.evaluate(.biometrics, context: token, reuse: 0, interactive: true) == .granted)
        try t.store.user.unenroll()
        #expect(find(t, "bank", .fail, context: token).status == SecStatus.itemNotFound)
    }

    @Test func theReuseDurationSparesNoPromptAfterAMatchInAnApp() throws {
        let t = try device()
        #expect(t.add(["service": "bank", "accessControl": Self.currentSet]).status == 0)
        try answer(t, .match)
        #expect(t.store.user.evaluate(.biometrics, context: String(repeating: "a1", count: 16), reuse: 0,
                                      interactive: true) == .granted)
        // Apple's reuse counts a device unlock by Touch ID alone; nothing unlocks by biometry here.
        let reused = String(repeating: "a2", count: 16)
        #expect(t.store.user.evaluate(.biometrics, context: reused, reuse: 300, interactive: false) == .notInteractive,
                "a match in an app is not reused")
        #expect(find(t, "bank", .fail, context: reused).status == SecStatus.interactionNotAllowed)
        try answer(t, .nomatch)
        #expect(t.store.user.evaluate(.biometrics, context: reused, reuse: 300, interactive: true) == .failed,
                "the prompt takes the queued answer")
    }

    @Test func biometryNeedsThePasscodeAfterARestart() throws {
        let t = try device()
        let any = String(AccessControlFlags.biometryAny.rawValue)
        #expect(t.add(["service": "face", "accessControl": any, "accessible": "Always"]).status == 0)
        t.restart()
        #expect(t.store.user.state().lockedOut)
        try answer(t, .match)
        #expect(find(t, "face").status == SecStatus.authFailed)
        #expect(t.store.user.state().queued == 1, "the prompt fails without taking the answer")
        #expect(t.store.user.evaluate(.biometrics, context: String(repeating: "b1", count: 16), reuse: 0,
                                      interactive: true) == .lockedOut)
        try t.unlock()
        #expect(!t.store.user.state().lockedOut)
        #expect(find(t, "face").status == 0, "after the unlock the queued match is taken")

        t.restart()
        try t.store.user.respond(.passcode, times: 1, passcode: TestDevice.secret(TestDevice.passcode))
        #expect(t.store.user.evaluate(.deviceOwner, context: String(repeating: "b2", count: 16), reuse: 0,
                                      interactive: true) == .granted)
        #expect(!t.store.user.state().lockedOut, "a passcode answer lifts it too")
        #expect(t.device.phase == .beforeFirstUnlock)
        try answer(t, .match)
        #expect(find(t, "face").status == 0)
    }

    @Test func biometryNeedsThePasscodeAfter48HoursWithoutIt() throws {
        let t = try device()
        let any = String(AccessControlFlags.biometryAny.rawValue)
        #expect(t.add(["service": "face", "accessControl": any, "accessible": "Always"]).status == 0)
        t.device.advanceClock(by: 47 * 3600)
        try answer(t, .match)
        #expect(find(t, "face").status == 0, "47 hours: biometry still answers")
        t.device.advanceClock(by: 3600 + 1)
        #expect(t.store.user.state().lockedOut)
        try answer(t, .match)
        #expect(find(t, "face").status == SecStatus.authFailed)
        #expect(t.store.user.state().queued == 1)
        t.lock()
        try t.unlock()
        #expect(find(t, "face").status == 0)
    }

    @Test func updatingAProtectedItemAsksToo() throws {
        let t = try device()
        #expect(t.add(["service": "bank", "accessControl": Self.currentSet], data: "old").status == 0)
        try answer(t, .cancel)
        #expect(t.update(["service": "bank"], newData: "new").status == SecStatus.userCanceled)
        try answer(t, .match)
        #expect(t.update(["service": "bank"], newData: "new").status == 0)
        try answer(t, .match)
        #expect(find(t, "bank").items.first?.data == Data("new".utf8))
        #expect(t.find(["service": "bank"], returning: "attributes").items.first?.attributes?["accessControl"] == Self.currentSet,
                "an update keeps the access control")
    }

    /// Flags SecAccessControlCreateWithFlags refuses fail the update whatever the user
    /// answers: it is refused before the item's own access control asks anything.
    @Test func anUpdateToFlagsAppleRefusesAsksNothing() throws {
        let t = try device()
        try t.store.user.setPromptTimeout(1)
        let any = String(AccessControlFlags.biometryAny.rawValue)
        #expect(t.add(["service": "bank", "accessControl": any], data: "old").status == 0)
        try answer(t, .match)
        let refused: [AccessControlFlags] = [[.biometryAny, .biometryCurrentSet], [.userPresence, .devicePasscode]]
        for flags in refused {
            #expect(t.update(["service": "bank"], to: ["accessControl": String(flags.rawValue)], newData: "new").status
                    == SecStatus.param, "\(flags.nameList)")
        }
        #expect(t.store.user.state().queued == 1, "no prompt took the match")
        #expect(t.store.user.state().prompts == 0)
        #expect(t.find(["service": "bank"], returning: "attributes").items.first?.attributes?["accessControl"] == any)
        #expect(find(t, "bank").items.first?.data == Data("old".utf8), "the item is as it was")
    }

    @Test func anUpdateToCurrentSetWithNothingEnrolledAsksNothing() throws {
        let t = try device(enrolled: false)
        try t.store.user.setPromptTimeout(1)
        let pin = String(AccessControlFlags.devicePasscode.rawValue)
        #expect(t.add(["service": "pin", "accessControl": pin], data: "old").status == 0)
        try t.store.user.respond(.passcode, times: 1, passcode: TestDevice.secret(TestDevice.passcode))
        #expect(t.update(["service": "pin"], to: ["accessControl": Self.currentSet], newData: "new").status
                == SecStatus.authFailed)
        #expect(t.store.user.state().queued == 1, "no prompt took the passcode")
        #expect(t.store.user.state().prompts == 0)
        #expect(t.find(["service": "pin"], returning: "attributes").items.first?.attributes?["accessControl"] == pin)
    }

    @Test func theFlagsAreSealedWithTheItem() throws {
        let t = try device()
        guard let domain = t.store.user.domainState else { Issue.record("not enrolled"); return }
        #expect(t.add(["service": "bank", "accessControl": Self.currentSet]).status == 0)
        try t.store.pool.writeWithoutTransaction { _ = try $0.checkpoint(.truncate) }
        let files = t.databaseFiles()
        #expect(files.range(of: Data("accessControl".utf8)) == nil)
        #expect(files.range(of: Data(domain.utf8)) == nil)
    }

    @Test func badFlagsAreErrSecParam() throws {
        let t = try device()
        for flags in ["faceOnly", String((AccessControlFlags.or.union(.and)).rawValue), String(1 << 7), ""] {
            #expect(t.add(["service": "bad", "accessControl": flags]).status == SecStatus.param, "\(flags)")
        }
        #expect(AccessControlFlags(names: "biometryAny,or,devicePasscode") == [.biometryAny, .or, .devicePasscode])
    }

    @Test func aQueryMatchesOnItsAccessControl() throws {
        // Never ignored: a delete naming an access control once removed every item.
        let t = try device()
        let presence = String(AccessControlFlags.userPresence.rawValue)
        #expect(t.add(["service": "plain1"]).status == 0)
        #expect(t.add(["service": "plain2"]).status == 0)
        #expect(t.add(["service": "bank", "accessControl": Self.currentSet]).status == 0)
        #expect(t.add(["service": "either", "accessControl": presence]).status == 0)

        let found = t.find(["accessControl": presence], limit: "all", returning: "attributes")
        #expect(found.status == 0)
        #expect(found.items.compactMap { $0.attributes?["service"] } == ["either"])
        #expect(t.find(["service": "plain1", "accessControl": presence], returning: "attributes").status
                == SecStatus.itemNotFound)
        let devicePasscode = String(AccessControlFlags.devicePasscode.rawValue)
        #expect(t.delete(["accessControl": devicePasscode]).status == SecStatus.itemNotFound)
        try answer(t, .match)
        #expect(t.update(["accessControl": presence], to: ["label": "changed"]).status == 0)

        #expect(t.delete(["accessControl": Self.currentSet]).status == 0)
        let left = t.find([:], limit: "all", returning: "attributes")
        #expect(left.items.compactMap { $0.attributes?["service"] }.sorted() == ["either", "plain1", "plain2"])
        #expect(left.items.compactMap { $0.attributes?["label"] } == ["changed"])
    }
}

@Suite struct SimulatedUserTests {
    @Test func clearingDropsEveryQueuedAnswerAndWipesThePasscode() throws {
        let t = try TestDevice()
        let user = SimulatedUser(device: t.device, promptTimeout: 0.3)
        try user.enroll(type: nil)
        let passcode = TestDevice.secret(TestDevice.passcode)
        try user.respond(.match, times: 3, passcode: nil)
        try user.respond(.passcode, times: 2, passcode: passcode)
        #expect(user.state().queued == 5)
        user.clearAnswers()
        #expect(user.state().queued == 0)
        #expect(passcode.isWiped)
        #expect(user.evaluate(.biometrics, context: String(repeating: "c", count: 32), reuse: 0, interactive: true) == .cancelled,
                "the prompt finds no answer, as with none queued")
        try user.respond(.match, times: 1, passcode: nil)
        #expect(user.evaluate(.biometrics, context: String(repeating: "d", count: 32), reuse: 0, interactive: true) == .granted,
                "answers queued after the clear are taken")
    }

    @Test func aRestartDropsTheQueuedAnswers() throws {
        let t = try TestDevice()
        let user = SimulatedUser(device: t.device, promptTimeout: 0.3)
        try user.enroll(type: nil)
        let passcode = TestDevice.secret(TestDevice.passcode)
        try user.respond(.cancel, times: 2, passcode: nil)
        try user.respond(.passcode, times: 1, passcode: passcode)
        t.restart()
        #expect(user.state().queued == 0, "a reboot forgets what the user was about to answer")
        #expect(passcode.isWiped)
    }

    @Test func anUnansweredPromptFailsAsCancelledAfterItsTimeout() throws {
        let t = try TestDevice()
        let user = SimulatedUser(device: t.device, promptTimeout: 0.3)
        try user.enroll(type: .touchID)
        let started = Date()
        #expect(user.evaluate(.biometrics, context: String(repeating: "0", count: 32), reuse: 0, interactive: true) == .cancelled)
        #expect(Date().timeIntervalSince(started) >= 0.25)
    }

    @Test func anAnswerGivenWhileThePromptWaitsIsTaken() throws {
        let t = try TestDevice()
        let user = SimulatedUser(device: t.device, promptTimeout: 20)
        try user.enroll(type: nil)
        DispatchQueue.global().asyncAfter(deadline: .now() + 0.2) { try? user.respond(.match, times: 1, passcode: nil) }
        #expect(user.evaluate(.biometrics, context: String(repeating: "1", count: 32), reuse: 0, interactive: true) == .granted)
    }

    @Test func twoPromptsAtOnceShareOneDeadline() throws {
        let t = try TestDevice()
        let user = SimulatedUser(device: t.device, promptTimeout: 4)
        try user.enroll(type: nil)
        let outcomes = Mutex<[AuthorizationOutcome]>([])
        let done = DispatchSemaphore(value: 0)
        let started = Date()
        // Threads of their own: both prompts must be asked at once, whatever else runs.
        for token in ["5", "6"] {
            Thread {
                let outcome = user.evaluate(.biometrics, context: String(repeating: token, count: 32), reuse: 0, interactive: true)
                outcomes.withLock { $0.append(outcome) }
                done.signal()
            }.start()
        }
        Thread.sleep(forTimeInterval: 2)
        try user.respond(.match, times: 1, passcode: nil)
        done.wait()
        done.wait()
        let all = outcomes.withLock { $0 }
        #expect(all.filter { $0 == .granted }.count == 1)
        #expect(all.filter { $0 == .cancelled }.count == 1)
        // Answered at 2 s: the other prompt ends at 4 s, not 2 + 4.
        #expect(Date().timeIntervalSince(started) < 5.5, "the waiting prompt does not start its own 4 s after the first")
    }

    /// An empty passcode answer would be checked, and counted as a failed attempt, at
    /// the next prompt: it is refused when given.
    @Test func anEmptyPasscodeAnswerIsRefused() throws {
        let t = try TestDevice()
        #expect(throws: BiometryError.self) { try t.store.user.respond(.passcode, times: 1, passcode: TestDevice.secret("")) }
        #expect(t.store.user.state().queued == 0)
        #expect(t.device.status().failedAttempts == 0)
    }

    @Test func theEnrollmentSurvivesAndRemovingThePasscodeEndsIt() throws {
        let t = try TestDevice()
        try t.store.user.enroll(type: .touchID)
        let domain = t.store.user.domainState
        let again = SimulatedUser(device: t.device)
        #expect(again.domainState == domain)
        #expect(again.state().type == .touchID)
        try t.device.changePasscode(current: TestDevice.secret(TestDevice.passcode), new: nil)
        // Read first: #expect would reflect the user it is asked about, whose device
        // holds noncopyable state, to print a failure, and crash the test process.
        let enrolled = t.store.user.state().enrolled
        #expect(!enrolled)
        #expect(throws: BiometryError.passcodeNotSet) { try t.store.user.enroll(type: nil) }
    }

    @Test func aDamagedRecordReadsAsNothingEnrolled() throws {
        let t = try TestDevice()
        try t.store.user.enroll(type: nil)
        try Data("{not json".utf8).write(to: URL(fileURLWithPath: t.root + "/biometry.json"))
        let user = SimulatedUser(device: t.device)
        #expect(user.recordProblem == "biometry.json is damaged")
        #expect(!user.state().enrolled)
    }

    @Test func anUnreadableDeviceRecordReadsAsNothingEnrolled() throws {
        let t = try TestDevice()
        try t.store.user.enroll(type: nil)
        let record = DeviceRecordStore.statePath(of: t.device.deviceUUID, in: t.secretStore)
        try Data("{not json".utf8).write(to: URL(fileURLWithPath: record))
        let user = SimulatedUser(device: t.device)
        #expect(user.recordProblem == "the device's record in its secret store cannot be read")
        #expect(!user.state().enrolled)
    }

    @Test func anOlderRecordPutBackReadsAsNothingEnrolled() throws {
        let t = try TestDevice()
        try t.store.user.enroll(type: nil)
        let path = t.root + "/biometry.json"
        let first = try Data(contentsOf: URL(fileURLWithPath: path))
        try t.store.user.reenroll(type: nil)
        #expect(SimulatedUser(device: t.device).recordProblem == nil)
        try first.write(to: URL(fileURLWithPath: path))
        let user = SimulatedUser(device: t.device)
        #expect(user.recordProblem?.contains("not the one last written") == true)
        #expect(!user.state().enrolled)
        #expect(user.domainState == nil)
    }

    @Test func theReuseDurationSparesNoRecentMatch() throws {
        let t = try TestDevice()
        let user = SimulatedUser(device: t.device, promptTimeout: 0.2)
        try user.enroll(type: nil)
        try user.respond(.match, times: 1, passcode: nil)
        #expect(user.evaluate(.biometrics, context: String(repeating: "2", count: 32), reuse: 0, interactive: true) == .granted)
        #expect(user.evaluate(.biometrics, context: String(repeating: "3", count: 32), reuse: 60, interactive: false) == .notInteractive)
    }
}
