/**
 * The pages outside an organization, chosen by what svc put in the document (`<meta name="svc-page">`,
 * src/pages/PageData.ts): a chunk of its own, so the organization's views load none of it.
 */
import { render } from "preact"
import type { PageData } from "../../../src/pages/PageData.js"
import { AccountPage } from "./Account.js"
import { DevicePage } from "./Device.js"
import { InvitationPage } from "./Invitation.js"
import { SignInPage } from "./SignIn.js"

const Page = ({ data }: { readonly data: PageData }) => {
  switch (data.page) {
    case "sign-in":
      return <SignInPage data={data} />
    case "device":
      return <DevicePage data={data} />
    case "invitation":
      return <InvitationPage data={data} />
    case "account":
      return <AccountPage data={data} />
  }
}

export const renderPage = (data: PageData, into: HTMLElement) => render(<Page data={data} />, into)
