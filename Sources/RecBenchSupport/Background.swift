import Dispatch

/// A value computed on another thread while the caller goes on; `value()` waits for it.
/// For long sequential work (a file's SHA-256) that can overlap other work.
package final class Background<Value: Sendable>: @unchecked Sendable {
    // Written once by the worker before `done` is left; read only after waiting on `done`.
    private var result: Value?
    private let done = DispatchGroup()

    /// Starts `work` at once.
    package init(_ work: @escaping @Sendable () -> Value) {
        DispatchQueue.global().async(group: done) { self.result = work() }
    }

    /// The value, once the work has finished.
    package func value() -> Value {
        done.wait()
        return result!
    }
}
