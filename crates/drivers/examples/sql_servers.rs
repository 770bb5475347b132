//! Starts one PostgreSQL and one MariaDB server the way bakeoff's managed
//! targets do (their own recipes, table `kv` made), prints their URLs (and
//! where their Unix sockets are), and
//! stops both when standard input closes: the servers bench/vs-sql-peers.sh
//! runs every tool against.
//!
//!   cargo run --release -p bakeoff-drivers --example sql_servers

use std::io::Read;

fn main() {
    let (pg, _) = match bakeoff_drivers::postgres::start_with_kv(None) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("cannot start postgres: {e}");
            std::process::exit(1);
        }
    };
    let (maria, _) = match bakeoff_drivers::mariadb::start_with_kv(None) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("cannot start mariadb: {e}");
            std::process::exit(1);
        }
    };
    println!("postgres://bakeoff@127.0.0.1:{}/postgres", pg.addr.port());
    println!("mariadb://root@127.0.0.1:{}", maria.addr.port());
    println!("postgres pid {}", pg.pid);
    println!("mariadb pid {}", maria.pid);
    // Where the Unix sockets are (bench/vs-sql-peers.sh --transport unix):
    // PostgreSQL's directory, MariaDB's file.
    println!("postgres socket {}", pg.dir().display());
    println!(
        "mariadb socket {}",
        maria.dir().join("mariadb.sock").display()
    );
    // Until whoever started this closes our standard input (or dies).
    let _ = std::io::stdin().read_to_end(&mut Vec::new());
    drop(maria);
    drop(pg);
}
