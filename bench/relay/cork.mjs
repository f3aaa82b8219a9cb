// send() for a ws WebSocket whose frames of one turn of the event loop leave in one write:
// the underlying socket is corked at the first send of a turn and uncorked on the next tick.
export function corked(ws) {
  const socket = ws._socket;
  let isCorked = false;
  const uncork = () => {
    isCorked = false;
    socket.uncork();
  };
  return (data) => {
    if (!isCorked && socket) {
      isCorked = true;
      socket.cork();
      process.nextTick(uncork);
    }
    ws.send(data);
  };
}
