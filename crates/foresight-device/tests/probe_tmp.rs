use foresight_core::{Instant, Lba};
use foresight_device::{disksim, DevRequest, Device, Hdd, Op};

fn demerit(a: &mut Vec<f64>, b: &mut Vec<f64>) -> f64 {
    a.sort_by(|x, y| x.partial_cmp(y).unwrap());
    b.sort_by(|x, y| x.partial_cmp(y).unwrap());
    let q = |v: &Vec<f64>, p: f64| {
        let n = v.len() as f64;
        let pos = p * n - 0.5;
        if pos <= 0.0 { return v[0]; }
        let i = pos.floor() as usize;
        if i + 1 >= v.len() { return v[v.len()-1]; }
        let f = pos - i as f64;
        v[i] * (1.0 - f) + v[i + 1] * f
    };
    let mut s = 0.0; let k = 10000;
    for j in 1..=k { let p = j as f64 / k as f64; let d = q(a,p) - q(b,p); s += d*d; }
    (s / k as f64).sqrt()
}

#[test]
#[ignore]
fn probe() {
    for name in ["atlas10k", "ibm18es", "cheetah4LP"] {
        let d = disksim::import(std::path::Path::new(&format!("/work/shared/data/disksim/{name}.diskspecs"))).unwrap();
        let mut params = d.params.clone();
        if std::env::var("NOFREE").is_ok() { params.read_free_blocks = false; }
        if std::env::var("OVER").is_ok() { params.readahead_over_request = true; }
        if std::env::var("WT").is_ok() { params.write_cache = foresight_device::WriteCache::Off; }
        if std::env::var("NORA").is_ok() { params.readahead_mode = foresight_device::ReadAheadMode::Budget; }
        if std::env::var("NOCOMB").is_ok() { params.combine_sequential_writes = false; }
        let mut hdd = Hdd::new(params);
        let text = std::fs::read_to_string(format!("/work/shared/data/disksim/{name}.trace")).unwrap();
        let mut t_ns: f64 = 0.0;
        let mut meas = vec![]; let mut sim = vec![];
        let mut out = vec![];
        let mut free = Instant::ZERO;
        let mut rows = vec![]; let mut rots: Vec<(f64,f64)> = vec![];
        let closed = std::env::var("CLOSED").is_ok();
        for (i, line) in text.lines().enumerate() {
            let c: Vec<&str> = line.split_whitespace().collect();
            let op = if c[0] == "R" { Op::Read } else { Op::Write };
            let lba: u64 = c[2].parse().unwrap();
            let n: u32 = c[3].parse().unwrap();
            let svc: f64 = c[4].parse().unwrap();
            let gap: f64 = c[5].parse().unwrap();
            let start = Instant((t_ns as u64).max(free.0));
            hdd.submit(start, DevRequest { id: i as u64, op, lba: Lba(lba), sectors: n });
            let te = hdd.next_event().unwrap();
            out.clear();
            hdd.advance(te, &mut out);
            let c0 = out[0];
            free = c0.at;
            let s = (c0.at - start).as_millis_f64();
            if std::env::var("DEBUG").ok().and_then(|v| v.parse::<usize>().ok()).is_some_and(|k| k == i + 1 || k == i + 2) && name == std::env::var("DRIVE").unwrap_or_default() {
                eprintln!("#{} {:?} lba {lba} n {n} start {:?} bd {:?} hit {}", i + 1, op, start, c0.breakdown, c0.cache_hit);
                for k in 0..hdd.cache().len() { eprintln!("   seg {k}: {:?}", hdd.cache().segment(k)); }
            }
            sim.push(s); meas.push(svc / 1000.0);
            rows.push((op, lba, n, svc/1000.0, s, c0.cache_hit)); rots.push((c0.breakdown.seek.as_millis_f64(), c0.breakdown.rotate.as_millis_f64()));
            if closed { t_ns = c0.at.0 as f64 + gap * 1000.0; } else { t_ns += gap * 1000.0; }
        }
        let (mut a, mut b) = (sim.clone(), meas.clone());
        let dm = demerit(&mut a, &mut b);
        let mean = |v: &Vec<f64>| v.iter().sum::<f64>() / v.len() as f64;
        eprintln!("{name}: demerit {dm:.3} ms; mean sim {:.3} meas {:.3}", mean(&sim), mean(&meas));
        // classes
        let cls = |op: Op, lo: f64, hi: f64, v: &Vec<(Op,u64,u32,f64,f64,bool)>, sim: bool| v.iter().filter(|r| r.0 == op && { let x = if sim { r.4 } else { r.3 }; x >= lo && x < hi }).count();
        for (lo, hi) in [(0.0, 1.5), (1.5, 4.0), (4.0, 100.0)] {
            eprintln!("  R [{lo},{hi}) meas {} sim {} | W meas {} sim {}", cls(Op::Read, lo, hi, &rows, false), cls(Op::Read, lo, hi, &rows, true), cls(Op::Write, lo, hi, &rows, false), cls(Op::Write, lo, hi, &rows, true));
        }
        if let Ok(path) = std::env::var("DUMP") {
            let mut s = String::new();
            for (r, q) in rows.iter().zip(&rots) { s.push_str(&format!("{:?} {} {} {:.3} {:.3} {} {:.3} {:.3}\n", r.0, r.1, r.2, r.3, r.4, r.5, q.0, q.1)); }
            std::fs::write(format!("{path}/{name}.rows"), s).unwrap();
        }
    }
}

#[test]
#[ignore]
fn probe_seq() {
    let d = disksim::import(std::path::Path::new("/work/shared/data/disksim/cheetah4LP.diskspecs")).unwrap();
    let mut hdd = Hdd::new(d.params.clone());
    let reqs = [(2236464u64, 4u32, 0u64), (2236468, 4, 21_944_000), (2236464, 4, 77_134_000)];
    let mut out = vec![];
    for (i, &(lba, n, t)) in reqs.iter().enumerate() {
        hdd.submit(Instant(t), DevRequest { id: i as u64, op: Op::Read, lba: Lba(lba), sectors: n });
        let te = hdd.next_event().unwrap();
        out.clear();
        hdd.advance(te, &mut out);
        eprintln!("{lba}: {:?} hit {}", (out[0].at - Instant(t)).as_millis_f64(), out[0].cache_hit);
        for k in 0..hdd.cache().len() { eprintln!("   seg {k}: {:?}", hdd.cache().segment(k)); }
    }
}
