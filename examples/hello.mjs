// A producer and a consumer in one file: `npm start` in one terminal, `node examples/hello.mjs` in another.
import { client } from 'whisker-mq';

const host = process.env.WHISKER_HOST ?? '127.0.0.1:7780@whisker';
const producer = client();
const consumer = client();
await producer.connect({ hosts: [host], clientId: 'hello-producer', keysDirectory: 'keys/producer' });
await consumer.connect({ hosts: [host], clientId: 'hello-consumer', keysDirectory: 'keys/consumer' });

let allReceived = () => {};
const three = new Promise((resolve) => (allReceived = () => resolve(undefined)));
let received = 0;
const handle = consumer.consume('greetings/v1/*', { prefetch: 10 }, (err, msg, done, info) => {
  if (err) throw err;
  console.log(`got ${JSON.stringify(msg)} on ${info.channel.id} from ${info.from}`);
  done(); // ack: the broker forgets it
  if (++received === 3) allReceived();
});
await handle.ready; // the broker knows the consumer: nothing sent now can miss it

for (const name of ['Ada', 'Grace', 'Linus']) await producer.send(`greetings/v1/${name}`, { hello: name });
await three;
await Promise.all([producer.disconnect(), consumer.disconnect()]);
