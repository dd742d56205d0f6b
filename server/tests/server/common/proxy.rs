//! A TCP proxy of the test's own between the server and its database: cutting it closes every
//! connection through it and stops listening, so new connections are refused, as when the
//! network between them goes down or the database stops.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Mutex;
use tokio::task::JoinHandle;

/// A cuttable proxy on a fixed loopback port in front of `target`.
pub struct Proxy {
    pub port: u16,
    target: SocketAddr,
    /// The accept loop and every connection's copy task, while the proxy is up.
    tasks: Arc<Mutex<Vec<JoinHandle<()>>>>,
}

impl Proxy {
    pub async fn start(target: SocketAddr) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind the proxy");
        let port = listener.local_addr().unwrap().port();
        let proxy = Proxy { port, target, tasks: Arc::default() };
        proxy.serve(listener).await;
        proxy
    }

    async fn serve(&self, listener: TcpListener) {
        let (tasks, target) = (self.tasks.clone(), self.target);
        let accept = tokio::spawn(async move {
            while let Ok((mut client, _)) = listener.accept().await {
                let copy = tokio::spawn(async move {
                    if let Ok(mut server) = TcpStream::connect(target).await {
                        let _ = tokio::io::copy_bidirectional(&mut client, &mut server).await;
                    }
                });
                let mut tasks = tasks.lock().await;
                tasks.retain(|t| !t.is_finished());
                tasks.push(copy);
            }
        });
        self.tasks.lock().await.push(accept);
    }

    /// The outage: every connection closed, the port no longer listening.
    pub async fn cut(&self) {
        for task in self.tasks.lock().await.drain(..) {
            task.abort();
        }
    }

    /// The database is back on the same port.
    pub async fn restore(&self) {
        let deadline = Instant::now() + Duration::from_secs(10);
        let listener = loop {
            match TcpListener::bind(("127.0.0.1", self.port)).await {
                Ok(listener) => break listener,
                Err(e) => {
                    assert!(Instant::now() < deadline, "cannot listen on the proxy's port again: {e}");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            }
        };
        self.serve(listener).await;
    }
}
