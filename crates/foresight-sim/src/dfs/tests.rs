use super::*;

fn quick(system: DfsSystem, streams: u32) -> DfsParams {
    DfsParams {
        system,
        streams,
        duration: Duration::from_millis(2000),
        ..DfsParams::default()
    }
}

#[test]
fn every_system_moves_data() {
    for s in foresight_policy::adaptive::dfs::DFS_SYSTEMS {
        let r = run(&quick(*s, 2)).unwrap();
        assert!(r.report.throughput_mib_s > 1.0, "{s}: {:?}", r.report);
    }
}

#[test]
#[ignore = "exploration: prints a table"]
fn explore() {
    for streams in [1u32, 4, 16, 32, 64] {
        let mut line = format!("{streams:>3}");
        for s in foresight_policy::adaptive::dfs::DFS_SYSTEMS {
            let mut p = quick(*s, streams);
            p.duration = Duration::from_secs(3);
            let r = run(&p).unwrap();
            line += &format!(" {}={:.0}(a{})", s, r.report.throughput_mib_s, r.alpha);
            if *s == DfsSystem::Aps {
                p.queue = Some(QueueKind::Shared);
                let r = run(&p).unwrap();
                line += &format!(" aps-shared={:.0}", r.report.throughput_mib_s);
            }
        }
        println!("{line}");
    }
}

#[test]
#[ignore = "exploration: prints one run"]
fn explore_one() {
    let sys: DfsSystem = std::env::var("SYS")
        .unwrap_or("lustre".into())
        .parse()
        .unwrap();
    let n: u32 = std::env::var("N").map_or(1, |v| v.parse().unwrap());
    let mut p = quick(sys, n);
    p.duration = Duration::from_secs(2);
    let r = run(&p).unwrap();
    println!("{}", serde_json::to_string_pretty(&r).unwrap());
}
