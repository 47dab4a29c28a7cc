import Foundation
import Crypto

// Hash throughput: recbench's own SHA-256 (this module's SHA256) against swift-crypto's (Crypto.SHA256, BoringSSL), best of 5 on 256 MiB.
let bytes = [UInt8](unsafeUninitializedCapacity: 256 << 20) { b, n in
    var x: UInt64 = 0x9E3779B97F4A7C15
    for i in 0..<b.count { x = x &* 6364136223846793005 &+ 1442695040888963407; b[i] = UInt8(truncatingIfNeeded: x >> 56) }
    n = b.count
}
func best(_ body: () -> String) -> (Double, String) {
    var t = Double.infinity, out = ""
    for _ in 0..<5 {
        let s = ContinuousClock.now
        out = body()
        let d = ContinuousClock.now - s
        t = min(t, Double(d.components.seconds) + Double(d.components.attoseconds) * 1e-18)
    }
    return (t, out)
}
let own = best { var h = SHA256(); bytes.withUnsafeBytes { h.update($0) }; return h.hexDigest() }
let kept = best { Crypto.SHA256.hash(data: bytes).map { String(format: "%02x", $0) }.joined() }
let mib = Double(bytes.count) / 1048576
print(String(format: "own SHA256:   %.3f s  %.0f MiB/s", own.0, mib / own.0))
print(String(format: "swift-crypto: %.3f s  %.0f MiB/s", kept.0, mib / kept.0))
print("same digest:", own.1 == kept.1)
