import { inflateSync } from 'node:zlib';

export interface DecodedPng {
  width: number;
  height: number;
  /** bytes per pixel: 3 (RGB) or 4 (RGBA) */
  channels: number;
  pixels: Buffer;
}

const SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

/** Decodes the 8-bit RGB/RGBA, non-interlaced PNGs a browser screenshot is; throws on anything else. */
export function decodePng(file: Buffer): DecodedPng {
  if (!file.subarray(0, 8).equals(SIGNATURE)) throw new Error('not a PNG');
  let offset = 8;
  let width = 0;
  let height = 0;
  let channels = 0;
  const data: Buffer[] = [];
  while (offset < file.length) {
    const length = file.readUInt32BE(offset);
    const type = file.toString('latin1', offset + 4, offset + 8);
    const body = file.subarray(offset + 8, offset + 8 + length);
    if (type === 'IHDR') {
      width = body.readUInt32BE(0);
      height = body.readUInt32BE(4);
      const [bitDepth, colourType, , , interlace] = [body[8], body[9], body[10], body[11], body[12]];
      if (bitDepth !== 8 || interlace !== 0 || (colourType !== 2 && colourType !== 6)) throw new Error(`unsupported PNG (depth ${bitDepth}, colour ${colourType})`);
      channels = colourType === 6 ? 4 : 3;
    } else if (type === 'IDAT') {
      data.push(body);
    } else if (type === 'IEND') {
      break;
    }
    offset += 12 + length;
  }
  if (width === 0 || height === 0) throw new Error('PNG without IHDR');
  return { width, height, channels, pixels: unfilter(inflateSync(Buffer.concat(data)), width, height, channels) };
}

function unfilter(raw: Buffer, width: number, height: number, bpp: number): Buffer {
  const stride = width * bpp;
  const out = Buffer.alloc(stride * height);
  for (let y = 0; y < height; y++) {
    const filter = raw[y * (stride + 1)]!;
    const line = raw.subarray(y * (stride + 1) + 1, (y + 1) * (stride + 1));
    const row = y * stride;
    for (let x = 0; x < stride; x++) {
      const a = x >= bpp ? out[row + x - bpp]! : 0;
      const b = y > 0 ? out[row - stride + x]! : 0;
      const c = x >= bpp && y > 0 ? out[row - stride + x - bpp]! : 0;
      let predictor = 0;
      if (filter === 1) predictor = a;
      else if (filter === 2) predictor = b;
      else if (filter === 3) predictor = (a + b) >> 1;
      else if (filter === 4) {
        const p = a + b - c;
        const pa = Math.abs(p - a), pb = Math.abs(p - b), pc = Math.abs(p - c);
        predictor = pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
      }
      out[row + x] = (line[x]! + predictor) & 0xff;
    }
  }
  return out;
}

/** how many pixels have exactly this colour */
export function countColour(png: DecodedPng, [r, g, b]: [number, number, number]): number {
  let count = 0;
  for (let i = 0; i < png.pixels.length; i += png.channels) {
    if (png.pixels[i] === r && png.pixels[i + 1] === g && png.pixels[i + 2] === b) count++;
  }
  return count;
}

export function distinctColours(png: DecodedPng): number {
  const seen = new Set<number>();
  for (let i = 0; i < png.pixels.length; i += png.channels) seen.add((png.pixels[i]! << 16) | (png.pixels[i + 1]! << 8) | png.pixels[i + 2]!);
  return seen.size;
}
