//! OTLP bodies a test builds as bytes, and the memory a process took for them.

/// A protobuf `ExportLogsServiceRequest` of `n` empty log records (two bytes
/// each on the wire), built as bytes: building it as messages would take the
/// memory the test measures. Decoded, each is a whole `LogRecord`.
pub fn empty_records(n: usize) -> Vec<u8> {
    fn varint(mut v: usize, out: &mut Vec<u8>) {
        while v >= 0x80 {
            out.push((v as u8) | 0x80);
            v >>= 7;
        }
        out.push(v as u8);
    }
    let scope: Vec<u8> = [0x12u8, 0x00].repeat(n);
    let mut resource = vec![0x12];
    varint(scope.len(), &mut resource);
    resource.extend_from_slice(&scope);
    let mut request = vec![0x0a];
    varint(resource.len(), &mut request);
    request.extend_from_slice(&resource);
    request
}

/// The most memory process `pid` has held (`VmHWM`), in MiB.
pub fn peak_mib(pid: u32) -> f64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let kib: f64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap();
    kib / 1024.0
}
