/**
 * A readers-writer lock for the store: pushes and restores share it, garbage collection holds it
 * alone, so a collection never removes a chunk that a push has written but no manifest names yet.
 * A waiting collection lets no new reader in, so pushes cannot starve it.
 */
export class SharedLock {
  private readers = 0
  private writer = false
  private writersWaiting = 0
  private readonly waiters: Array<() => void> = []

  private wakeAll() {
    const waiting = this.waiters.splice(0)
    for (const wake of waiting) wake()
  }

  private async until(ready: () => boolean) {
    while (!ready()) await new Promise<void>((resolve) => this.waiters.push(resolve))
  }

  async shared<A>(work: () => Promise<A>): Promise<A> {
    await this.until(() => !this.writer && this.writersWaiting === 0)
    this.readers++
    try {
      return await work()
    } finally {
      this.readers--
      this.wakeAll()
    }
  }

  async exclusive<A>(work: () => Promise<A>): Promise<A> {
    this.writersWaiting++
    try {
      await this.until(() => !this.writer && this.readers === 0)
    } finally {
      this.writersWaiting--
    }
    this.writer = true
    try {
      return await work()
    } finally {
      this.writer = false
      this.wakeAll()
    }
  }
}
