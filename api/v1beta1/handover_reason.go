package v1beta1

// ReasonWaitingForHandOver: Progressing, the MyDeployment waits for the
// pods it takes over from a Deployment to be handed over; the plugin's
// STATUS shows it as is. The migrate branch declares it with the
// hand-over's other names (AdoptFromAnnotation): when that lands, this
// file goes.
const ReasonWaitingForHandOver = "WaitingForHandOver"
